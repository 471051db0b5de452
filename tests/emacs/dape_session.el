;;; dape_session.el --- batch Emacs drives neural-dap through dape, as a user would -*- lexical-binding: t -*-

;; Loads dape from $ND_DAPE and the README's dape configuration from $ND_CONFIG (the README's block,
;; its adapter path replaced by this checkout's), visits $ND_PROGRAM (a file in a subfolder of a
;; project), and debugs it with the README's configuration: a breakpoint set before the launch, step
;; over and into, the README's step back (`neural-dap-step-back', on dape's `N' key) and reverse
;; continue (`C'), a conditional breakpoint, evaluate, continue to the end. Every stop (after what,
;; reason, frame name, line), the evaluate answer, the program's output, the launch's `program' and
;; `cwd', and whether the session ended are written as JSON to $ND_OUT; then Emacs exits.

(require 'json)
(add-to-list 'load-path (getenv "ND_DAPE"))
(require 'dape)
(load (getenv "ND_CONFIG") nil t)

(defvar nd-result (list :stops nil :errors nil))
(defvar nd-stops-seen 0)

(defun nd-report ()
  (let ((out (getenv "ND_OUT")))
    (with-temp-file out
      (insert (json-encode
               (list :stops (vconcat (reverse (plist-get nd-result :stops)))
                     :errors (vconcat (reverse (plist-get nd-result :errors)))
                     :evaluate (plist-get nd-result :evaluate)
                     :output (plist-get nd-result :output)
                     :launch (plist-get nd-result :launch)
                     :ended (if (plist-get nd-result :ended) t :json-false)))))))

(defun nd-error (text)
  (setq nd-result (plist-put nd-result :errors (cons text (plist-get nd-result :errors)))))

;; Each time dape shows the stopped program's source (the top frame), note where it stands.
(add-hook 'dape-display-source-hook
          (lambda ()
            (let* ((conn (dape--live-connection 'stopped t))
                   (frame (and conn (dape--current-stack-frame conn))))
              (when frame
                (setq nd-stops-seen (1+ nd-stops-seen))
                (setq nd-result
                      (plist-put nd-result :stops
                                 (cons (list :reason (dape--state-reason conn)
                                             :name (plist-get frame :name)
                                             :line (plist-get frame :line))
                                       (plist-get nd-result :stops))))))))

(defun nd-wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun nd-stop-after (label act)
  "Do ACT, then wait for the next stop's source to show; label the stop LABEL."
  (let ((before nd-stops-seen))
    (funcall act)
    (unless (nd-wait (lambda () (> nd-stops-seen before)) 30)
      (error "no stop after %s" label))
    (plist-put (car (plist-get nd-result :stops)) :after label)))

(defun nd-key (keys)
  "What dape's global map (under `dape-key-prefix') runs for KEYS, run as a command."
  (lambda () (call-interactively (keymap-lookup dape-global-map keys))))

;; The launch request as dape sends it (program relative to the project, the cwd).
(advice-add 'dape--launch-or-attach :before
            (lambda (conn &rest _)
              (let ((config (dape--config conn)))
                (setq nd-result (plist-put nd-result :launch
                                           (list :program (plist-get config :program)
                                                 :cwd (plist-get config :cwd)))))))

(condition-case err
    (progn
      (find-file (getenv "ND_PROGRAM"))
      (python-mode)
      (goto-char (point-min))
      (forward-line 9)                  ; a breakpoint set before the launch, on print("total", ...)
      (dape-breakpoint-toggle)
      (nd-stop-after "launch" (lambda () (dape (dape--config-eval 'neural-dap nil))))
      (nd-stop-after "step over" (lambda () (call-interactively #'dape-next)))
      (nd-stop-after "step over" (lambda () (call-interactively #'dape-next)))
      (nd-stop-after "step into" (lambda () (call-interactively #'dape-step-in)))
      (nd-stop-after "step over" (lambda () (call-interactively #'dape-next)))
      (nd-stop-after "step over" (lambda () (call-interactively #'dape-next)))
      (nd-stop-after "step into" (lambda () (call-interactively #'dape-step-in)))
      (nd-stop-after "N" (nd-key "N"))
      (nd-stop-after "N" (nd-key "N"))
      (with-current-buffer (find-buffer-visiting (getenv "ND_PROGRAM"))
        (goto-char (point-min))
        (forward-line 1)
        (dape-breakpoint-expression "x == 3"))
      (nd-stop-after "continue" (lambda () (call-interactively #'dape-continue)))
      (let* ((conn (dape--live-connection 'stopped))
             (frame (dape--current-stack-frame conn))
             (answered nil))
        (dape-request conn :evaluate
                      (list :expression "x * 10" :frameId (plist-get frame :id) :context "repl")
                      (lambda (body error)
                        (setq nd-result (plist-put nd-result :evaluate
                                                   (if error (format "error: %s" error)
                                                     (plist-get body :result))))
                        (setq answered t)))
        (nd-wait (lambda () answered) 20))
      (nd-stop-after "C" (nd-key "C"))
      (nd-stop-after "continue" (lambda () (call-interactively #'dape-continue)))
      (nd-stop-after "continue" (lambda () (call-interactively #'dape-continue)))
      (nd-stop-after "continue" (lambda () (call-interactively #'dape-continue)))
      (call-interactively #'dape-continue)
      (setq nd-result (plist-put nd-result :ended
                                 (nd-wait (lambda () (null (dape--live-connections))) 30))))
  (error (nd-error (error-message-string err))))

;; What the REPL showed: the program's output, and dape's messages (an adapter's error too).
(when-let* ((repl (get-buffer "*dape-repl*")))
  (with-current-buffer repl
    (setq nd-result (plist-put nd-result :output (buffer-substring-no-properties (point-min) (point-max))))))

(nd-report)
(kill-emacs 0)
