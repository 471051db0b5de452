;;; dap_mode_session.el --- batch Emacs drives neural-dap through dap-mode, as a user would -*- lexical-binding: t -*-

;; Loads the installed dap-mode (Debian's elpa-dap-mode; not dap-ui) and the README's dap-mode
;; configuration from $ND_CONFIG (its adapter path replaced by this checkout's), visits $ND_PROGRAM
;; (a file in a subfolder of a project), and debugs it with the README's template: a breakpoint set
;; before the launch (so dap-mode sets the exception filters as it starts), step over and into, the
;; README's `neural-dap-step-back' and `neural-dap-reverse-continue', a conditional breakpoint,
;; evaluate, continue to the end. Every stop (after what, reason, frame name, line), the evaluate
;; answer, the program's output, the launch's `program' and `cwd', and whether the session ended are
;; written as JSON to $ND_OUT; then Emacs exits.

(require 'json)
(load (getenv "ND_CONFIG") nil t)

(defvar nd-result (list :stops nil :errors nil))
(defvar nd-stops-seen 0)
(defvar nd-ended nil)

(defun nd-error (text)
  (setq nd-result (plist-put nd-result :errors (cons text (plist-get nd-result :errors)))))

;; Each time dap-mode goes to the stopped program's top frame, note where it stands.
(add-hook 'dap-stack-frame-changed-hook
          (lambda (session)
            (when-let* ((frame (dap--debug-session-active-frame session))
                        (thread (dap--debug-session-thread-id session)))
              (setq nd-stops-seen (1+ nd-stops-seen))
              (setq nd-result
                    (plist-put nd-result :stops
                               (cons (list :reason (gethash thread (dap--debug-session-thread-states session))
                                           :name (gethash "name" frame)
                                           :line (gethash "line" frame))
                                     (plist-get nd-result :stops)))))))
(add-hook 'dap-terminated-hook (lambda (_session) (setq nd-ended t)))

(defun nd-wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun nd-stop-after (label act)
  "Do ACT, then wait for the next stop's frame; label the stop LABEL."
  (let ((before nd-stops-seen))
    (funcall act)
    (unless (nd-wait (lambda () (> nd-stops-seen before)) 30)
      (error "no stop after %s" label))
    (plist-put (car (plist-get nd-result :stops)) :after label)))

(defun nd-command (command)
  (lambda () (call-interactively command)))

(condition-case err
    (progn
      (find-file (getenv "ND_PROGRAM"))
      (python-mode)
      (goto-char (point-min))
      (forward-line 9)                  ; a breakpoint set before the launch, on print("total", ...)
      (dap-breakpoint-add)
      (let ((template (copy-tree (cdr (assoc "neural-dap: time travel" dap-debug-template-configurations)))))
        (nd-stop-after "launch" (lambda () (dap-debug template))))
      (let ((args (dap--debug-session-launch-args (dap--cur-session))))
        (setq nd-result (plist-put nd-result :launch
                                   (list :program (plist-get args :program) :cwd (plist-get args :cwd)))))
      (nd-stop-after "step over" (nd-command #'dap-next))
      (nd-stop-after "step over" (nd-command #'dap-next))
      (nd-stop-after "step into" (nd-command #'dap-step-in))
      (nd-stop-after "step over" (nd-command #'dap-next))
      (nd-stop-after "step over" (nd-command #'dap-next))
      (nd-stop-after "step into" (nd-command #'dap-step-in))
      (nd-stop-after "step back" (nd-command #'neural-dap-step-back))
      (nd-stop-after "step back" (nd-command #'neural-dap-step-back))
      (with-current-buffer (find-buffer-visiting (getenv "ND_PROGRAM"))
        (goto-char (point-min))
        (forward-line 1)
        (dap-breakpoint-add)
        ;; the condition as the user types it at dap-breakpoint-condition's prompt
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "x == 3")))
          (call-interactively #'dap-breakpoint-condition)))
      (nd-stop-after "continue" (nd-command #'dap-continue))
      (let* ((session (dap--cur-session))
             (answered nil))
        (dap--send-message
         (dap--make-request "evaluate"
                            (list :expression "x * 10"
                                  :frameId (gethash "id" (dap--debug-session-active-frame session))
                                  :context "repl"))
         (lambda (response)
           (setq nd-result (plist-put nd-result :evaluate
                                      (if (gethash "success" response)
                                          (gethash "result" (gethash "body" response))
                                        (format "error: %s" (gethash "message" response)))))
           (setq answered t))
         session)
        (nd-wait (lambda () answered) 20))
      (nd-stop-after "reverse continue" (nd-command #'neural-dap-reverse-continue))
      (nd-stop-after "continue" (nd-command #'dap-continue))
      (nd-stop-after "continue" (nd-command #'dap-continue))
      (nd-stop-after "continue" (nd-command #'dap-continue))
      (call-interactively #'dap-continue)
      (nd-wait (lambda () nd-ended) 30))
  (error (nd-error (error-message-string err))))

;; What the session's output buffer shows: the program's output.
(when-let* ((session (dap--cur-session))
            (buffer (dap--debug-session-output-buffer session)))
  (with-current-buffer buffer
    (setq nd-result (plist-put nd-result :output (buffer-substring-no-properties (point-min) (point-max))))))

(with-temp-file (getenv "ND_OUT")
  (insert (json-encode
           (list :stops (vconcat (reverse (plist-get nd-result :stops)))
                 :errors (vconcat (reverse (plist-get nd-result :errors)))
                 :evaluate (plist-get nd-result :evaluate)
                 :output (plist-get nd-result :output)
                 :launch (plist-get nd-result :launch)
                 :ended (if nd-ended t :json-false)))))
(kill-emacs 0)
