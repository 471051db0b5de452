/* The recording tracer in C: one event-recording core with two front ends,
 *   - PyEval_SetTrace (CPython 3.11), and
 *   - sys.monitoring callbacks (CPython 3.12+): C functions the child registers as the callbacks,
 *     so no Python code runs for the common events.
 * The pure-Python engines in child/engines.py and child/pyskeleton.py define the behaviour; this
 * does the same per event. Values that need a repr or a structure are handed to the recorder's
 * own Python functions, so every engine encodes values identically.
 *
 * Built against the limited API of 3.11 (one .abi3.so): the recording child may run under another
 * interpreter than the one neural-dap is installed in (the `python` launch key), and a 3.12 or 3.13
 * child loads the same build. The one call outside the limited API is PyEval_SetTrace, declared
 * below by hand: only the 3.11 front end calls it, and its signature has not changed since 2.x.
 *
 * Full capture: events appended to the recorder's list are the tuples child/wire.py documents:
 *   ("c", inv, code_id, line, depth, changes[, resumes[, library]])  ("l", inv, line, changes, caught)
 *   ("r", inv, line, value)  ("x", inv, line, value)  ("u", inv, changes)
 *
 * Skeleton mode records only what the debugger actions need, in fixed-size binary records (see
 * child/skeleton.py: 12 bytes an event, 12 more a call), and no locals at all; every `hook_every`
 * events (or at `hook_at`) it calls the recorder's hook, which takes checkpoints and enforces
 * limits. Inside a capture window [capture_from, capture_to] (a materialisation replaying from a
 * checkpoint) it also does the full capture, starting with a snapshot
 * ("s", inv, code_id, line, depth, changes) of every frame already on the stack.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Not in the limited API (see above); the 3.11 front end only. */
typedef int (*Py_tracefunc)(PyObject *, PyFrameObject *, int, PyObject *);
PyAPI_FUNC(void) PyEval_SetTrace(Py_tracefunc, PyObject *);
/* Not in the limited API either, exported with this signature since 3.9 (both front ends): the
 * frame under a call, to tell a call by library code from one by the traced frame below. */
PyAPI_FUNC(PyFrameObject *) PyFrame_GetBack(PyFrameObject *);
/* Not in the limited API, exported with these signatures since 3.0 (the sys.monitoring front end's
 * CALL callback): the code a Python function runs, and the function a bound method calls. */
PyAPI_FUNC(PyObject *) PyFunction_GetCode(PyObject *);
PyAPI_FUNC(PyObject *) PyMethod_Function(PyObject *);
/* The journal (trace/_journal.c), when the recording child has it preloaded: the tracer's own
 * callbacks are the debugger's plumbing (their pipes, clocks and forks are never journaled), and
 * the reprs it asks for are code run for the user in the sandbox (effects refused). Found by name
 * at import; absent, these do nothing. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#define JOURNAL_PLUMBING 1
#define JOURNAL_SANDBOX 2
static int (*journal_enter)(int);
static void (*journal_leave)(int);
static void (*journal_set_counter)(const long long *);
static void (*journal_set_takes)(const long long *, const volatile int *);

static int enter_context(int context) { return journal_enter != NULL ? journal_enter(context) : 0; }
static void leave_context(int previous) {
    if (journal_leave != NULL)
        journal_leave(previous);
}

#define TRACE_CALL 0
#define TRACE_EXCEPTION 1
#define TRACE_LINE 2
#define TRACE_RETURN 3

#define SET_REF(slot, value)          \
    do {                              \
        PyObject *old_ = (PyObject *)(slot); \
        (slot) = (value);             \
        Py_XDECREF(old_);             \
    } while (0)

typedef struct {
    PyObject *code;       /* a reference while the invocation is on our stack */
    PyFrameObject *frame; /* a reference, or NULL (sys.monitoring: found when its locals are needed) */
    const int *lines;     /* sys.monitoring: the code's line of each instruction (see line_table) */
    Py_ssize_t n_lines;
    long long inv;
    PyObject *objs;       /* name -> object last seen (NULL in skeleton mode until captured) */
    PyObject *encs;       /* name -> encoding, for objects that can change in place */
    PyObject *snaps;      /* name -> (list, its items): a small list of atoms as last encoded */
    PyObject *globals;    /* a <module> entry of a recording of every thread: its globals (see module_update) */
    PyObject *pending;    /* an exception raised in this frame and not yet handled */
    PyObject *seen;       /* a generator's or coroutine's run: the latest exception raised in it, handled
                           * or not (settrace: what a `finally` that re-raises takes out of it, with
                           * nothing pending). Only a run's: an entry lives until the next pause, so
                           * this never keeps an exception the program dropped alive for long (a
                           * module's frame would, for the whole run, with its traceback's frames) */
    int module_scope;
    long long last;       /* index of this invocation's latest event */
    int line;             /* ... and its line (a snapshot's: the frame as its events left it) */
    long code_id;
    int resumable;        /* a generator's or coroutine's code: it may leave by a yield and resume */
    Py_ssize_t depth;     /* as recorded: its place on the stack, 0 for an entry of its own (a task's coroutine) */
    PyObject *bp_lines;   /* a live recording: the breakpoint lines of its code's file (borrowed), or NULL */
    PyObject *calling;    /* sys.monitoring: the code of the Python function this frame's current line
                           * is calling (its CALL event), compared by address only; NULL: none */
    long foreign;         /* settrace: untraced frames running right above this one (library code it
                           * called): the one whose return brings this to 0 returns into this frame */
    const int *deferred;  /* sys.monitoring: its code's deferred line of each instruction (see
                           * deferred_line_event), NULL: none; ... */
    const int *defer_flags; /* ... and whether a line (from defer_lo on, defer_n of them) is one */
    int defer_lo, defer_n;
    int at_calls;         /* ... and whether one is made at a CALL */
    int first_line;       /* sys.monitoring: its code's first line (see first_line_event), 0: none ... */
    int first_made;       /* ... whose event was made at the start, its LINE still to come */
} Entry;

/* A recording of every thread: the module globals another thread's stack shows, as one thread
 * last diffed them (see module_update). */
typedef struct SharedModule {
    PyObject *globals;      /* a reference; NULL: an empty slot */
    long long inv;          /* the <module> invocation on another thread's stack that shows them; -1: none */
    PyObject *objs, *encs, *snaps; /* this thread's shadow of them */
    unsigned long long version;
    int versioned;
} SharedModule;
#define SHARED_MODULES 8

static void clear_shared(SharedModule *m) {
    Py_CLEAR(m->globals);
    Py_CLEAR(m->objs);
    Py_CLEAR(m->encs);
    Py_CLEAR(m->snaps);
}

/* skeleton records, little-endian, packed */
#pragma pack(push, 1)
typedef struct {
    unsigned int inv;
    int line;
    unsigned char kind; /* 0 call, 1 line, 2 return, 3 exception; | 0x80 a line just after a handled exception;
                         * | 0x40 a call by library code (LIBRARY_CALL) */
    unsigned char pad[3];
} EventRecord;
typedef struct {
    unsigned int code_id;
    int caller_last; /* the caller's latest event before this call (-1: none) */
    int resumes;     /* the invocation this one continues: a generator or coroutine resumed (-1: none) */
} CallRecord;
#pragma pack(pop)
#define LIBRARY_CALL 0x40
#define SUSPENDED 0x20 /* on an exit: a generator or coroutine pausing (a yield, an await), not returning */

/* What the tracer knows of a code object, found by its address: a dict keyed by code objects
 * would hash the code's contents (its constants, names, bytecode) at every lookup, which costs
 * more than all the rest of a call event. */
typedef struct {
    PyObject *code;       /* a reference (NULL: an empty slot) */
    int user;             /* the user's code (traced) */
    int enabled;          /* sys.monitoring: its local events are on */
    long code_id;         /* -1: none yet */
    const int *lines;     /* sys.monitoring: its line table (owned by Tracer.line_tables) */
    Py_ssize_t n_lines;   /* -1: not made yet */
    int resumable;        /* a generator's, coroutine's or async generator's code */
    int library;          /* library code, as the recorder's `library(code)` says (-1: not asked yet) */
    PyObject *bp_lines;   /* a live recording: the breakpoint lines of its file (borrowed from Tracer.breakpoints) */
    int first_line;       /* sys.monitoring: the line whose LINE event can only come right after a start
                           * (0: none; see first_line_event) */
    int start_line;       /* sys.monitoring: the line of its start (not a generator's: its resumes
                           * start elsewhere); 0: not known yet */
    const int *deferred;  /* sys.monitoring: per instruction, the line whose event it makes (see
                           * deferred_line_event), NULL: none; and those lines as flags */
    const int *defer_flags;
    int defer_lo, defer_n;
    int at_calls;         /* ... one of them is made at a CALL (mon_call reads the offset then) */
} CodeInfo;

typedef struct Tracer {
    PyObject_HEAD
    PyObject *events;        /* list */
    PyObject *user_cache;    /* dict: code -> bool */
    PyObject *judge;         /* callable(code) -> bool */
    PyObject *code_ids;      /* dict: code -> int */
    PyObject *code_id;       /* callable(code) -> int */
    PyObject *encode_atom;   /* callable(value) -> encoding */
    PyObject *encode_object; /* callable(value) -> encoding */
    PyObject *value_repr;    /* callable(value) -> encoding of a return value */
    PyObject *bounded;       /* callable(value) -> repr str */
    CodeInfo *codes;         /* open addressing by address, a power of two slots */
    Py_ssize_t codes_len, codes_cap;
    Entry *stack;
    Py_ssize_t depth;
    Py_ssize_t capacity;
    long long next_inv;
    long long *next_inv_p;   /* where the next invocation id is kept: next_inv, or its group's (one numbering) */
    struct Group *group;     /* a recording of every thread: the group of this thread's tracer (else NULL) */
    int unnamed;             /* (group) the thread's name is not known yet: ask again at its next event */
    volatile int gone;       /* (group) its thread has ended (set by the thread's key destructor) */
    struct SharedModule *shared; /* (group) the module globals other threads show: see module_update */
    int active;
    pthread_t thread;        /* the thread traced: events of others are ignored (pthread_self: no
                              * call into the interpreter's thread-local state per event) */
    /* the sys.monitoring front end */
    int monitoring;
    PyObject *disable;       /* sys.monitoring.DISABLE */
    PyObject *enable;        /* callable(code): turn its local events on */
    PyObject *jump_line;     /* callable(code, offset, target) -> a line, or DISABLE */
    PyObject *line_tables;   /* list of bytes: each code's int line per 2-byte instruction (-1: none) */
    PyObject *make_line_table; /* callable(code) -> that bytes */
    /* generators and coroutines (child/coroutines.py); NULL: not followed */
    PyObject *resumed;       /* callable(frame) -> (the invocation a resumed frame continues or -1, run by the user's code) */
    PyObject *left;          /* callable(frame, inv, raised): the frame left by a yield, a return or an exception */
    int dotted;              /* show the names CPython makes (`.0`, a comprehension's iterator) */
    PyObject *library;       /* callable(code) -> bool: library code (see called_by_library); NULL: all is */
    PyObject *foreign_return; /* settrace: callable(frame, value, inv) for a frame not traced that returns
                               * into the innermost traced one (child/returned.py); NULL: none */
    /* skeleton mode */
    int skeleton;
    long long count;          /* events so far */
    long long hook_at;        /* call the hook when count reaches this */
    long long hook_every;     /* ... and every this many events */
    long long next_every;     /* the next multiple of hook_every (no division per event) */
    long long capture_from;   /* full capture for events in [capture_from, capture_to] */
    long long capture_to;
    int snapshotted;          /* the frames on the stack at capture_from were sent */
    PyObject *hook;           /* callable(count) -> next hook_at */
    PyObject *flush;          /* callable(events: bytes, calls: bytes, first_index) */
    EventRecord *ev;
    Py_ssize_t ev_len, ev_cap;
    CallRecord *calls;
    Py_ssize_t calls_len, calls_cap;
    long long ev_first;       /* index of ev[0] */
    /* a live recording (child/frontier.py): where the running program stops for the adapter. A
     * stop is made at an event, before it is recorded: that event is captured in full (a window of
     * one event, with the frames on the stack), then the hook is called right after it */
    int live;                 /* any of these set */
    long long stop_at;        /* stop at this event (-1: no) */
    long long stop_depth;     /* stop at the first line or exit at this place on the stack or below (-1: no) */
    long long stop_exit_inv;  /* stop where this invocation exits (-1: no) */
    long long stop_resume_of; /* stop where a run that continues this suspended invocation starts (-1: no) */
    int stop_exceptions;      /* 1: stop where an exception leaves a frame, and at a line that caught one;
                               * 2: only where one leaves the thread's outermost traced frame (ends a thread) */
    PyObject *breakpoints;    /* dict: filename -> frozenset of breakpoint lines; NULL: none */
    int stop_reason;          /* why the hook is called now: 0 not a stop, else a STOP_* */
    PyObject *seen;           /* an event's reprs of objects (id -> (object, text)), shared by every value
                               * it encodes (see begin_event); NULL: none */
    int in_event;             /* between begin_event and end_event */
    /* (group) a recording of every thread as skeletons: the tracer whose records, count and hook
     * every thread's share (the adopted one: one stream of records in the order the events
     * happened, numbered as one); NULL: its own */
    struct Tracer *sink;
    long long ordinal;        /* (group) the thread's number in the thread table (-1: not known yet) */
    long long lock_calls;     /* (group of skeletons) the thread's calls of a lock's acquiring methods so far */
    int consume_pending;      /* (group, a replay) the run's last event is captured: the turn passes on
                               * once its full event is sent (see record_grouped) */
    long long stop_index;     /* (group of skeletons, live) the index of the latest stop's event (-1: none) */
} Tracer;

/* Where a tracer's records go and its events are counted: its group's one stream, or its own. */
static inline Tracer *sink_of(Tracer *t) { return t->sink != NULL ? t->sink : t; }

/* (a group of skeletons, live) a stop is made at the event about to be recorded (live_stop) */
static inline int stop_pending(Tracer *t) { return t->live && t->stop_reason != 0 && t->stop_index == -1; }

/* A recording of every thread (see the Group type below): one Tracer per thread, one numbering of
 * invocations, one event list, each run of a thread's events after a thread record. */
typedef struct Group Group;
static int mark_thread(Tracer *t);
static int module_update(Tracer *t);

static inline int in_traced_thread(Tracer *t) { return pthread_equal(pthread_self(), t->thread); }

#define STOP_AT 1
#define STOP_BREAKPOINT 2
#define STOP_STEP 3
#define STOP_EXCEPTION 4

static PyObject *TAG_C, *TAG_L, *TAG_R, *TAG_X, *TAG_U, *TAG_S, *FUNCTION_TYPE, *METHOD_TYPE, *CO_NAME, *F_LOCALS;
static const long long SMALL_INT = 1LL << 53;
/* CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR */
#define RESUMABLE_FLAGS (0x20 | 0x80 | 0x100 | 0x200)

static int is_atom(PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || t == &PyBool_Type ||
           v == Py_None || t == &PyBytes_Type || t == &PyComplex_Type;
}

static int starts_with(PyObject *name, Py_UCS4 a, Py_UCS4 b) {
    Py_ssize_t n = PyUnicode_GetLength(name);
    if (n < 1 || PyUnicode_ReadChar(name, 0) != a)
        return 0;
    return b == 0 || (n >= 2 && PyUnicode_ReadChar(name, 1) == b);
}

/* A module's global whose text is made once for the object it holds (its dunders, functions,
 * classes, builtins and callable descriptors, which debugpy files in groups). */
static int hidden_global(PyObject *name, PyObject *value) {
    if (starts_with(name, '_', '_'))
        return 1;
    if ((PyObject *)Py_TYPE(value) == FUNCTION_TYPE || PyType_Check(value) || PyCFunction_Check(value))
        return 1;
    /* a callable descriptor (functools' lru_cache wrapper): debugpy files it with the functions */
    PyTypeObject *kind = Py_TYPE(value);
    return PyType_GetSlot(kind, Py_tp_descr_get) != NULL && PyType_GetSlot(kind, Py_tp_descr_set) == NULL &&
           PyCallable_Check(value);
}

/* Drop `name` from a shadow dict, if there. */
static int forget(PyObject *dict, PyObject *name) {
    if (dict == NULL)
        return 0;
    int has = PyDict_Contains(dict, name);
    return has < 0 ? -1 : has ? PyDict_DelItem(dict, name) : 0;
}

static PyObject *call1(PyObject *fn, PyObject *arg) { return PyObject_CallFunctionObjArgs(fn, arg, NULL); }

/* A callback of the recorder's own (its hooks, judges, helpers). */
static PyObject *call_ours(PyObject *fn, PyObject *arg) {
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *result = call1(fn, arg);
    leave_context(previous);
    return result;
}

/* A callback that runs the program's code for the debugger (a repr): in the sandbox. */
static PyObject *call_users(PyObject *fn, PyObject *arg) {
    int previous = enter_context(JOURNAL_SANDBOX);
    PyObject *result = call1(fn, arg);
    leave_context(previous);
    return result;
}

static PyObject *encode(Tracer *t, PyObject *value, int atom) {
    if (atom) {
        if (PyLong_CheckExact(value)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (!overflow && v > -SMALL_INT && v < SMALL_INT) {
                Py_INCREF(value);
                return value;
            }
        }
        if (PyBool_Check(value) || value == Py_None) {
            Py_INCREF(value);
            return value;
        }
        return call_users(t->encode_atom, value);
    }
    if (!t->in_event)
        return call_users(t->encode_object, value);
    int previous = enter_context(JOURNAL_SANDBOX);
    PyObject *result = PyObject_CallFunctionObjArgs(t->encode_object, value, t->seen, NULL);
    leave_context(previous);
    return result;
}

/* One event's encodings share one memo of objects' reprs: a handler's `self` shows its server's
 * socket, and the module's `server` shown after it (module_update) shows it again. Both are the
 * same moment, so the text is the same (Reprs.structure's rule within one value, made one
 * event's); the memo is emptied when the event ends, so it keeps no object alive past it and no
 * later event sees a text of before. */
static int begin_event(Tracer *t) {
    if (t->seen == NULL && (t->seen = PyDict_New()) == NULL)
        return -1;
    if (PyDict_Size(t->seen) > 0)
        PyDict_Clear(t->seen);
    t->in_event = 1;
    return 0;
}

static void end_event(Tracer *t) {
    t->in_event = 0;
    if (t->seen != NULL && PyDict_Size(t->seen) > 0)
        PyDict_Clear(t->seen);
}

static int append_change(PyObject **changes, PyObject *name, PyObject *enc) {
    if (*changes == NULL) {
        if ((*changes = PyList_New(0)) == NULL)
            return -1;
        PyObject_GC_UnTrack(*changes); /* (see emit) */
    }
    return PyList_Append(*changes, name) < 0 || PyList_Append(*changes, enc) < 0 ? -1 : 0;
}

#define SHALLOW_ITEMS 64 /* a longer list is encoded at each event (copying and comparing it costs more) */

/* `value` is the small list of atoms last encoded under `name`, holding the very same items in the
 * same order: its repr is unchanged (recorder.py's _atom_items says why identity is the test: 1,
 * 1.0 and True are equal, their reprs are not). */
static int same_atom_list(PyObject *snaps, PyObject *name, PyObject *value) {
    if (snaps == NULL || !PyList_CheckExact(value))
        return 0;
    PyObject *kept = PyDict_GetItemWithError(snaps, name);
    if (kept == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *items = PyTuple_GetItem(kept, 1);
    Py_ssize_t n = PyList_Size(value);
    if (PyTuple_GetItem(kept, 0) != value || items == NULL || PyTuple_Size(items) != n) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GetItem(value, i) != PyTuple_GetItem(items, i))
            return 0;
    return 1;
}

/* The items of a small list of atoms, as a tuple; NULL for anything else (or an error, set). */
static PyObject *atom_items(PyObject *snaps, PyObject *value) {
    if (snaps == NULL || !PyList_CheckExact(value) || PyList_Size(value) > SHALLOW_ITEMS)
        return NULL;
    PyObject *items = PyList_AsTuple(value);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_Size(items); i++)
        if (!is_atom(PyTuple_GetItem(items, i))) {
            Py_DECREF(items);
            return NULL;
        }
    return items;
}

/* After `value` was encoded under `name`: keep its items as they were before the repr (a small list
 * of atoms: `items`), else forget it. */
static int keep_atom_list(PyObject *snaps, PyObject *name, PyObject *value, PyObject *items) {
    if (snaps == NULL)
        return 0;
    if (items == NULL)
        return forget(snaps, name);
    PyObject *kept = PyTuple_Pack(2, value, items);
    int rc = kept == NULL ? -1 : PyDict_SetItem(snaps, name, kept);
    Py_XDECREF(kept);
    return rc;
}

/* The changed locals as a flat list [name, enc, ...], or None; NULL on error. */
static PyObject *diff(Tracer *t, Entry *e, PyObject *locals) {
    PyObject *changes = NULL;
    PyObject *name, *value;
    Py_ssize_t pos = 0, seen = 0;
    while (PyDict_Next(locals, &pos, &name, &value)) {
        if (!PyUnicode_Check(name))
            continue;
        int atom = is_atom(value);
        PyObject *enc;
        /* by identity: an atom, and a module's imported modules, functions, classes and dunders
         * (shown as debugpy shows them: a module inline, the others in its groups), made once for
         * the object a name holds and kept out of the values that change in place, so a module's
         * unchanged globals stay undiffed at every line of every thread */
        int fixed = !atom && e->module_scope && (PyModule_Check(value) || hidden_global(name, value));
        if (atom || fixed) {
            seen++;
            if (PyDict_GetItemWithError(e->objs, name) == value)
                continue;
            if (PyErr_Occurred())
                goto error;
            enc = encode(t, value, atom);
            if (enc == NULL)
                goto error;
            if (PyDict_SetItem(e->objs, name, value) < 0 || forget(e->encs, name) < 0 || forget(e->snaps, name) < 0) {
                Py_DECREF(enc);
                goto error;
            }
        } else {
            if (!t->dotted && starts_with(name, '.', 0))
                continue;
            seen++;
            if (same_atom_list(e->snaps, name, value))
                continue;
            /* the items are taken before the repr: another thread may change the list while the
             * repr runs (the GIL passes there), and a later look must see that change */
            PyObject *items = atom_items(e->snaps, value);
            if (items == NULL && PyErr_Occurred())
                goto error;
            enc = encode(t, value, 0);
            if (enc == NULL) {
                Py_XDECREF(items);
                goto error;
            }
            int kept = PyDict_SetItem(e->objs, name, value) < 0 ? -1 : keep_atom_list(e->snaps, name, value, items);
            Py_XDECREF(items);
            if (kept < 0) {
                Py_DECREF(enc);
                goto error;
            }
            PyObject *old = PyDict_GetItemWithError(e->encs, name);
            if (old != NULL) {
                int same = PyObject_RichCompareBool(old, enc, Py_EQ);
                if (same < 0) {
                    Py_DECREF(enc);
                    goto error;
                }
                if (same) {
                    Py_DECREF(enc);
                    continue;
                }
            } else if (PyErr_Occurred()) {
                Py_DECREF(enc);
                goto error;
            }
            if (PyDict_SetItem(e->encs, name, enc) < 0) {
                Py_DECREF(enc);
                goto error;
            }
        }
        int bad = append_change(&changes, name, enc);
        Py_DECREF(enc);
        if (bad < 0)
            goto error;
    }
    if (e->module_scope || PyDict_Size(e->objs) > seen) {
        /* something may have been deleted */
        PyObject *keys = PyDict_Keys(e->objs);
        if (keys == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PyList_Size(keys); i++) {
            PyObject *key = PyList_GetItem(keys, i);
            int has = PyDict_Contains(locals, key);
            if (has < 0)
                goto keys_error;
            if (has)
                continue;
            if (PyDict_DelItem(e->objs, key) < 0 || forget(e->encs, key) < 0 || forget(e->snaps, key) < 0)
                goto keys_error;
            PyObject *gone = PyList_New(0);
            if (gone == NULL)
                goto keys_error;
            int bad = append_change(&changes, key, gone);
            Py_DECREF(gone);
            if (bad < 0)
                goto keys_error;
        }
        Py_DECREF(keys);
        goto done;
    keys_error:
        Py_DECREF(keys);
        goto error;
    }
done:
    if (changes == NULL)
        Py_RETURN_NONE;
    return changes;
error:
    Py_XDECREF(changes);
    return NULL;
}

/* The frame's locals as a dict (3.13 gives a write-through proxy for a function's frame). */
static PyObject *frame_locals(PyFrameObject *frame) {
    PyObject *locals = PyObject_GetAttr((PyObject *)frame, F_LOCALS);
    if (locals == NULL || PyDict_Check(locals))
        return locals;
    PyObject *copy = PyDict_New();
    if (copy != NULL && PyDict_Update(copy, locals) < 0)
        Py_CLEAR(copy);
    Py_DECREF(locals);
    return copy;
}

static int find_frames(Tracer *t);

static PyObject *frame_diff(Tracer *t, Entry *e) {
    if (e->frame == NULL && find_frames(t) < 0)
        return NULL;
    if (e->frame == NULL) /* not found (see find_frames): no locals to show */
        Py_RETURN_NONE;
    PyObject *locals = frame_locals(e->frame);
    if (locals == NULL)
        return NULL;
    if (t->group != NULL && e->module_scope && PyDict_Check(locals)) {
        /* every thread recorded: a <module> frame's locals are its globals, which another thread
         * may change while a repr runs (the GIL is let go there): the diff walks a copy */
        PyObject *copy = PyDict_Copy(locals);
        Py_DECREF(locals);
        if (copy == NULL)
            return NULL;
        locals = copy;
    }
    PyObject *changes = diff(t, e, locals);
    Py_DECREF(locals);
    return changes;
}

static int emit(Tracer *t, PyObject *tuple) {
    if (tuple == NULL)
        return -1;
    if (t->group != NULL && mark_thread(t) < 0) {
        Py_DECREF(tuple);
        return -1;
    }
    /* An event (and its list of changes) holds names and encodings, never itself: it can be in no
     * cycle, so the cyclic GC need not look at it. Tens of thousands wait in the list for the
     * channel; left tracked, the collections CPython runs as they are made walked them all again
     * and again (nearly half of a recording of every thread). */
    PyObject_GC_UnTrack(tuple);
    int rc = PyList_Append(t->events, tuple);
    Py_DECREF(tuple);
    return rc;
}

/* -- skeleton records ------------------------------------------------------------------------------- */

/* A read-only view of a buffer for the length of one call, released after it: the buffer is
 * written again at once. */
static int release_view(PyObject *view) {
    if (view == NULL)
        return 0;
    PyObject *rc = PyObject_CallMethod(view, "release", NULL);
    Py_DECREF(view);
    if (rc == NULL)
        return -1; /* the flush kept a slice of it: a bug there, said loudly */
    Py_DECREF(rc);
    return 0;
}

/* Hand the buffered records to the flush callable as memoryviews of the buffers (copying ~1 MB
 * into fresh bytes objects at every flush cost more page faults than the rest of the flush). */
static int flush_records(Tracer *t) {
    if (t->ev_len == 0 && t->calls_len == 0)
        return 0;
    /* Every thread's records in one stream (a group of skeletons): the flush is Python code, which
     * lets another thread run and append to the very buffers; it is handed copies instead (a
     * megabyte copied per 65,536 events: a few nanoseconds an event). */
    int shared = t->group != NULL && t->sink == NULL;
    PyObject *events = shared ? PyBytes_FromStringAndSize((char *)t->ev, t->ev_len * (Py_ssize_t)sizeof(EventRecord))
                              : PyMemoryView_FromMemory((char *)t->ev, t->ev_len * (Py_ssize_t)sizeof(EventRecord), PyBUF_READ);
    PyObject *calls = shared ? PyBytes_FromStringAndSize((char *)t->calls, t->calls_len * (Py_ssize_t)sizeof(CallRecord))
                             : PyMemoryView_FromMemory((char *)t->calls, t->calls_len * (Py_ssize_t)sizeof(CallRecord), PyBUF_READ);
    PyObject *first = PyLong_FromLongLong(t->ev_first);
    t->ev_first += t->ev_len;
    t->ev_len = 0;
    t->calls_len = 0;
    PyObject *rc = NULL;
    if (events != NULL && calls != NULL && first != NULL) {
        int previous = enter_context(JOURNAL_PLUMBING);
        rc = PyObject_CallFunctionObjArgs(t->flush, events, calls, first, NULL);
        leave_context(previous);
    }
    Py_XDECREF(first);
    int released = shared ? (Py_XDECREF(events), Py_XDECREF(calls), 0) : release_view(events) | release_view(calls);
    if (rc == NULL || released < 0) {
        Py_XDECREF(rc);
        return -1;
    }
    Py_DECREF(rc);
    return 0;
}

static int group_turn(Tracer *t);     /* (below, with the group) */
static void group_consume(Tracer *t);

/* Record an event; its index in the stream (-1: error). In a group of skeletons every thread writes
 * to the one stream: group_turn makes room, marks a change of thread and waits for a replay's
 * turn, each of which may run Python code (and so let another thread record), until none is
 * needed; from there to the write nothing runs but this. The index is the record's place; the
 * event count (`counted`) may lag the records for a moment and is never used as one. */
static __attribute__((noinline)) long long record_grouped(Tracer *t, long long inv, int line, unsigned char kind);

/* Write one record into `s`'s buffer (there is room); its index in the stream. */
static inline long long write_record(Tracer *s, long long inv, int line, unsigned char kind) {
    long long index = s->ev_first + s->ev_len;
    EventRecord *r = &s->ev[s->ev_len++];
    r->inv = (unsigned int)inv;
    r->line = line;
    r->kind = kind;
    r->pad[0] = r->pad[1] = r->pad[2] = 0;
    return index;
}

static inline long long record_event(Tracer *t, long long inv, int line, unsigned char kind) {
    if (t->group != NULL)
        return record_grouped(t, inv, line, kind);
    if (t->ev_len == t->ev_cap && flush_records(t) < 0)
        return -1;
    return write_record(t, inv, line, kind);
}

/* record_event in a group of skeletons (the one-thread recording above stays as short as it was) */
static long long record_grouped(Tracer *t, long long inv, int line, unsigned char kind) {
    Tracer *s = sink_of(t);
    if (group_turn(t) < 0)
        return -1;
    if (inv < 0) {
        /* a call in a group of skeletons: numbered here, so invocations are numbered in the order
         * their calls are in the stream (the adapter's columns index them so), whatever thread
         * recorded while this one marked its run or waited for its turn */
        Entry *e = &t->stack[t->depth - 1];
        inv = e->inv = (*t->next_inv_p)++;
    }
    long long index = write_record(s, inv, line, kind);
    if (stop_pending(t)) {
        /* a live stop at this event (live_stop): it is the one captured, and the stop's */
        t->capture_from = t->capture_to = index;
        t->stop_index = index;
    }
    /* (a replay's turn passes on at a run's last event: see group_turn. An event captured in full
     * keeps the turn until its full event is sent: the next run's thread would otherwise send its
     * own first, where the value's repr lets the GIL go) */
    if (index >= t->capture_from && index <= t->capture_to)
        t->consume_pending = 1;
    else
        group_consume(t);
    return index;
}

static int record_call(Tracer *t, long code_id, long long caller_last, long long resumes) {
    t = sink_of(t);
    if (t->calls_len == t->calls_cap) {
        Py_ssize_t capacity = t->calls_cap * 2;
        CallRecord *grown = PyMem_Realloc(t->calls, capacity * sizeof(CallRecord));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->calls = grown;
        t->calls_cap = capacity;
    }
    CallRecord *r = &t->calls[t->calls_len++];
    r->code_id = (unsigned int)code_id;
    r->caller_last = (int)caller_last;
    r->resumes = (int)resumes;
    return 0;
}

/* Count one event; call the hook when due (it takes checkpoints, enforces limits, may not return). */
static __attribute__((noinline)) int call_hook(Tracer *t, long long n);

static int group_stopped(Tracer *t);

/* An event recorded as a skeleton is counted; in a group of skeletons, a live stop made at it
 * follows (group_stopped: the hook is not where a group's stops are made). */
static inline int counted(Tracer *t);
static inline int skeleton_counted(Tracer *t) {
    if (counted(t) < 0)
        return -1;
    return t->group != NULL && t->stop_reason != 0 ? group_stopped(t) : 0;
}

static inline int counted(Tracer *t) {
    if (t->group != NULL) {
        /* every thread as skeletons: the hook is called before the next event is recorded, in
         * group_turn, never after an event's record, where the Python code it runs could let
         * another thread's events in before the rest of this thread's line (a replay would not) */
        sink_of(t)->count++;
        return 0;
    }
    long long n = ++t->count;
    return n >= t->hook_at || n >= t->next_every ? call_hook(t, n) : 0;
}

/* The hook, due at event count `n` (it takes checkpoints, enforces limits, may not return). */
static int call_hook(Tracer *t, long long n) {
    if (n >= t->next_every)
        t->next_every = (n / t->hook_every + 1) * t->hook_every;
    PyObject *arg = PyLong_FromLongLong(n);
    if (arg == NULL)
        return -1;
    PyObject *next = call_ours(t->hook, arg);
    Py_DECREF(arg);
    if (next == NULL)
        return -1;
    long long at = PyLong_AsLongLong(next);
    Py_DECREF(next);
    if (at == -1 && PyErr_Occurred())
        return -1;
    t->hook_at = at;
    return 0;
}

/* every thread in full (the group below): a thread waits at its events while another is stopped for
 * the adapter, and a stop is made once its event is recorded */
static int wait_if_held(Tracer *t);
static int group_stopped(Tracer *t);

/* A live recording: make a stop at the event about to be recorded (number t->count): capture it in
 * full and call the hook right after it. */
static void live_stop(Tracer *t, int reason) {
    t->stop_reason = reason;
    t->capture_from = t->capture_to = t->count;
    t->snapshotted = 0;
    if (t->group != NULL && t->skeleton) {
        /* every thread as skeletons: the event's index is known once it is recorded (another
         * thread may record meanwhile): the window is the record this event writes (a stop pending,
         * `stop_pending`, captures it, and record_grouped makes its index the window), and the
         * group's on_stop follows it. (The window itself is not widened meanwhile: a thread that
         * joins the group copies the sink's.) */
        t->stop_index = -1;
    } else {
        t->hook_at = t->count + 1;
        if (t->group != NULL)
            return; /* (every thread in full: each event is whole already, the group's on_stop follows it) */
    }
    /* every frame on the stack is sent whole (its locals as they are now), not as changes since an
     * earlier stop's capture: each stop's window stands alone */
    for (Py_ssize_t d = 0; d < t->depth; d++) {
        Py_CLEAR(t->stack[d].objs);
        Py_CLEAR(t->stack[d].encs);
        Py_CLEAR(t->stack[d].snaps);
    }
}

/* Whether a hit of `line` stops: `lines` maps each breakpoint line of the file to the hits still
 * to run past there (a hit condition rules them out: the adapter counted them), counted down here;
 * the hit that finds 0 stops. (A set of lines, as older adapters sent: every hit stops.) */
static int has_line(PyObject *lines, int line) {
    if (lines == NULL)
        return 0;
    PyObject *number = PyLong_FromLong(line);
    if (number == NULL) {
        PyErr_Clear();
        return 0;
    }
    int found;
    if (PyDict_Check(lines)) {
        PyObject *skip = PyDict_GetItemWithError(lines, number); /* borrowed */
        long long left = skip != NULL ? PyLong_AsLongLong(skip) : 0;
        if (skip == NULL || (left == -1 && PyErr_Occurred())) {
            found = 0;
        } else if (left > 0) {
            PyObject *less = PyLong_FromLongLong(left - 1);
            if (less == NULL || PyDict_SetItem(lines, number, less) < 0)
                found = 1; /* (cannot count it down: stop, and the adapter decides, as without a count) */
            else
                found = 0;
            Py_XDECREF(less);
        } else {
            found = 1;
        }
    } else {
        found = PySet_Contains(lines, number);
    }
    Py_DECREF(number);
    if (found < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        return found > 0;
    }
    return found;
}

/* At a line of the top entry `e` (`caught`: right after a handled exception). */
static void live_line(Tracer *t, Entry *e, int line, int caught) {
    if (!t->live)
        return;
    if (t->stop_at >= 0 && t->count >= t->stop_at)
        live_stop(t, STOP_AT);
    else if (has_line(e->bp_lines, line))
        live_stop(t, STOP_BREAKPOINT);
    else if (t->stop_depth >= 0 && t->depth - 1 <= t->stop_depth)
        live_stop(t, STOP_STEP);
    else if (caught && t->stop_exceptions == 1)
        live_stop(t, STOP_EXCEPTION);
}

/* At the exit (a return, or an exception leaving) of the top entry. */
static void live_exit(Tracer *t, int raised) {
    if (!t->live)
        return;
    Entry *e = &t->stack[t->depth - 1];
    if (t->stop_at >= 0 && t->count >= t->stop_at)
        live_stop(t, STOP_AT);
    else if (raised && (t->stop_exceptions == 1 || (t->stop_exceptions == 2 && t->depth == 1)))
        live_stop(t, STOP_EXCEPTION);
    else if ((t->stop_depth >= 0 && t->depth - 1 <= t->stop_depth) || (t->stop_exit_inv >= 0 && e->inv == t->stop_exit_inv))
        live_stop(t, STOP_STEP);
}

/* At a call (the new entry is not on the stack yet). */
static void live_call(Tracer *t) {
    if (t->live && t->stop_at >= 0 && t->count >= t->stop_at)
        live_stop(t, STOP_AT);
}

static int capturing(Tracer *t) {
    /* the event about to be counted is number t->count (0-based) */
    long long count = sink_of(t)->count;
    if (t->sink != NULL || (t->group != NULL && t->skeleton))
        /* every thread as skeletons: the event's place is known only once it is recorded (another
         * thread may record while this one waits for its turn), so here only whether it may be
         * captured; in_window says, with the record's index */
        return count <= t->capture_to || stop_pending(t);
    return !t->skeleton || (count >= t->capture_from && count <= t->capture_to);
}

/* Whether the event recorded at `index` is captured in full (`maybe`: what capturing said). */
static inline int in_window(Tracer *t, int maybe, long long index) {
    if (!maybe || t->group == NULL || !t->skeleton)
        return maybe;
    return index >= t->capture_from && index <= t->capture_to;
}

static int is_module_code(PyObject *code) {
    PyObject *name = PyObject_GetAttr(code, CO_NAME);
    if (name == NULL)
        return -1;
    int module = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "<module>") == 0;
    Py_DECREF(name);
    return module;
}

/* The locals shadow of a frame: made when the frame is first captured. */
static int ensure_dicts(Entry *e) {
    if (e->objs != NULL)
        return 0;
    int module = is_module_code(e->code);
    if (module < 0)
        return -1;
    e->module_scope = module;
    e->objs = PyDict_New();
    e->encs = PyDict_New();
    e->snaps = PyDict_New();
    if (e->objs == NULL || e->encs == NULL || e->snaps == NULL) {
        Py_CLEAR(e->objs);
        Py_CLEAR(e->encs);
        Py_CLEAR(e->snaps);
        return -1;
    }
    return 0;
}

/* At the first captured event: every frame already on the stack, with all its locals. */
static int snapshot_stack(Tracer *t, Py_ssize_t upto) {
    if (t->snapshotted || !t->skeleton)
        return 0;
    t->snapshotted = 1;
    for (Py_ssize_t d = 0; d < upto; d++) {
        Entry *e = &t->stack[d];
        if (e->objs != NULL)
            continue;
        if (ensure_dicts(e) < 0)
            return -1;
        PyObject *changes = frame_diff(t, e);
        if (changes == NULL)
            return -1;
        /* (the line of its latest event: the top frame's f_lineno already says the line of the
         * event being captured, which the snapshot comes before) */
        int line = e->line;
        if (emit(t, Py_BuildValue("(OLliNN)", TAG_S, e->inv, e->code_id, line, PyLong_FromSsize_t(e->depth), changes)) < 0)
            return -1;
    }
    return 0;
}

/* -- events (both front ends) ------------------------------------------------------------------- */

static size_t address_hash(PyObject *code) { return (size_t)(((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull); }

static CodeInfo *find_slot(CodeInfo *codes, Py_ssize_t cap, PyObject *code) {
    size_t mask = (size_t)cap - 1, k = address_hash(code) & mask;
    while (codes[k].code != NULL && codes[k].code != code)
        k = (k + 1) & mask;
    return &codes[k];
}

static int grow_codes(Tracer *t) {
    Py_ssize_t cap = t->codes_cap ? t->codes_cap * 2 : 256;
    CodeInfo *codes = PyMem_Calloc(cap, sizeof(CodeInfo));
    if (codes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->codes_cap; i++)
        if (t->codes[i].code != NULL)
            *find_slot(codes, cap, t->codes[i].code) = t->codes[i];
    PyMem_Free(t->codes);
    t->codes = codes;
    t->codes_cap = cap;
    return 0;
}

/* The tracer's knowledge of `code`, judged (user's or not) on first sight; NULL: error. */
static CodeInfo *code_info(Tracer *t, PyObject *code) {
    if (t->codes_cap > 0) {
        CodeInfo *info = find_slot(t->codes, t->codes_cap, code);
        if (info->code == code)
            return info;
    }
    /* first sight: the recorder's judge says (and caches, by id: equal code objects of two files
     * are two codes) */
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL)
        return NULL;
    PyObject *user = PyDict_GetItemWithError(t->user_cache, key);
    Py_DECREF(key);
    if (user == NULL) {
        if (PyErr_Occurred())
            return NULL;
        user = call_ours(t->judge, code);
        if (user == NULL)
            return NULL;
        Py_DECREF(user); /* the recorder's cache keeps it */
    }
    if (2 * (t->codes_len + 1) > t->codes_cap && grow_codes(t) < 0)
        return NULL;
    CodeInfo *info = find_slot(t->codes, t->codes_cap, code);
    Py_INCREF(code);
    info->code = code;
    info->user = user == Py_True;
    info->enabled = 0;
    info->code_id = -1;
    info->lines = NULL;
    info->n_lines = -1;
    info->resumable = 0;
    info->library = -1;
    info->bp_lines = NULL;
    info->first_line = 0;
    info->start_line = 0;
    info->deferred = NULL;
    info->defer_flags = NULL;
    info->defer_lo = info->defer_n = info->at_calls = 0;
    if (t->breakpoints != NULL) {
        PyObject *filename = PyObject_GetAttrString(code, "co_filename");
        if (filename == NULL)
            return NULL;
        info->bp_lines = PyDict_GetItemWithError(t->breakpoints, filename);
        Py_DECREF(filename);
        if (info->bp_lines == NULL && PyErr_Occurred())
            return NULL;
    }
    if (info->user) {
        PyObject *flags = PyObject_GetAttrString(code, "co_flags");
        if (flags == NULL)
            return NULL;
        long value = PyLong_AsLong(flags);
        Py_DECREF(flags);
        if (value == -1 && PyErr_Occurred())
            return NULL;
        info->resumable = (value & RESUMABLE_FLAGS) != 0;
    }
    t->codes_len++;
    return info;
}

static long code_id_of(Tracer *t, CodeInfo *info) {
    if (info->code_id >= 0)
        return info->code_id;
    PyObject *key = PyLong_FromVoidPtr(info->code);
    if (key == NULL)
        return -1;
    PyObject *cid = PyDict_GetItemWithError(t->code_ids, key);
    Py_DECREF(key);
    if (cid != NULL)
        Py_INCREF(cid);
    else if (PyErr_Occurred() || (cid = call_ours(t->code_id, info->code)) == NULL)
        return -1;
    long id = PyLong_AsLong(cid);
    Py_DECREF(cid);
    if (id >= 0)
        info->code_id = id;
    return id;
}

static Entry *push(Tracer *t, PyObject *code, PyFrameObject *frame) {
    if (t->depth == t->capacity) {
        Py_ssize_t capacity = t->capacity ? t->capacity * 2 : 64;
        Entry *grown = PyMem_Realloc(t->stack, capacity * sizeof(Entry));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        t->stack = grown;
        t->capacity = capacity;
    }
    Entry *e = &t->stack[t->depth++];
    Py_INCREF(code);
    e->code = code;
    Py_XINCREF((PyObject *)frame);
    e->frame = frame;
    e->lines = NULL;
    e->n_lines = 0;
    /* (a group of skeletons numbers a call where its record is written: record_event) */
    e->inv = t->group != NULL && t->skeleton ? -1 : (*t->next_inv_p)++;
    e->objs = NULL;
    e->encs = NULL;
    e->snaps = NULL;
    e->globals = NULL;
    e->pending = NULL;
    e->seen = NULL;
    e->module_scope = 0;
    e->last = sink_of(t)->count;
    e->code_id = 0;
    e->resumable = 0;
    e->depth = t->depth - 1;
    e->bp_lines = NULL;
    e->calling = NULL;
    e->foreign = 0;
    e->first_line = 0;
    e->first_made = 0;
    e->deferred = NULL;
    e->defer_flags = NULL;
    e->defer_lo = e->defer_n = e->at_calls = 0;
    return e;
}

static void pop(Tracer *t) {
    Entry *e = &t->stack[--t->depth];
    Py_CLEAR(e->objs);
    Py_CLEAR(e->encs);
    Py_CLEAR(e->snaps);
    Py_CLEAR(e->globals);
    Py_CLEAR(e->pending);
    Py_CLEAR(e->seen);
    Py_CLEAR(e->frame);
    Py_CLEAR(e->code);
}

/* Whether the frame `started` (a call of the user's code with a traced frame `below` it) was called
 * by library code: the frame under it is not `below` (click running the user's command, sched
 * running a callback). A debugger stepping off its return stops where that code returns to the
 * traced caller, at the call line. One pointer comparison in the common case; on a mismatch the
 * recorder says once per code whether the frame under it is library code, or the user's own code
 * left untraced (a comprehension's frame where they are not recorded). 1, 0, or -1: error. */
static int called_by_library(Tracer *t, PyFrameObject *started, Entry *below) {
    PyFrameObject *back = PyFrame_GetBack(started);
    if (back == NULL || back == below->frame) {
        Py_XDECREF((PyObject *)back);
        return 0;
    }
    PyObject *code = (PyObject *)PyFrame_GetCode(back);
    Py_DECREF((PyObject *)back);
    /* sys.monitoring finds entries' frames late: there, the innermost frame of the user's code in
     * the traced thread is the top entry's, so its code is enough */
    int library = 0;
    if (code != below->code) {
        /* the answer is kept where the code is known already (its own start was seen); the table
         * is not grown here: the caller holds a pointer into it */
        CodeInfo *known = t->codes_cap > 0 ? find_slot(t->codes, t->codes_cap, code) : NULL;
        if (known != NULL && known->code != code)
            known = NULL;
        if (known != NULL && known->library >= 0)
            library = known->library;
        else if (t->library == NULL)
            library = 1;
        else {
            PyObject *answer = call_ours(t->library, code);
            library = answer == NULL ? -1 : PyObject_IsTrue(answer);
            Py_XDECREF(answer);
            if (known != NULL && library >= 0)
                known->library = library;
        }
    }
    Py_DECREF(code);
    return library;
}

/* A call of the user's code at `line`: a new invocation on the stack. `frame` may be NULL
 * (sys.monitoring): then the frame that starts is asked for when it is needed (a traced caller
 * below it, a capture). */
static int call_event_body(Tracer *t, PyFrameObject *frame, CodeInfo *info, int line);

/* (a replay's turn kept for a captured event passes on once the event is sent: record_grouped) */
static int call_event(Tracer *t, PyFrameObject *frame, CodeInfo *info, int line) {
    int rc = call_event_body(t, frame, info, line);
    if (t->consume_pending) {
        t->consume_pending = 0;
        group_consume(t);
    }
    return rc;
}


static int call_event_body(Tracer *t, PyFrameObject *frame, CodeInfo *info, int line) {
    if (t->group != NULL && wait_if_held(t) < 0)
        return -1;
    PyObject *code = info->code;
    long code_id = code_id_of(t, info);
    if (code_id == -1 && PyErr_Occurred())
        return -1;
    live_call(t);
    long long resumes = -1;
    int direct = 1;
    if (info->resumable && t->resumed != NULL) {
        PyFrameObject *started = frame != NULL ? frame : PyEval_GetFrame();
        if (started != NULL) {
            PyObject *found = call_ours(t->resumed, (PyObject *)started);
            if (found == NULL)
                return -1;
            int ok = PyArg_ParseTuple(found, "Lp", &resumes, &direct);
            Py_DECREF(found);
            if (!ok)
                return -1;
            /* a generator's or coroutine's first run says so (-2): a live step over its first
             * suspension waits for where it resumes (world/live.py) */
            if (resumes < 0)
                resumes = -2;
        }
    }
    /* a live step over an `await` that suspended its coroutine ends where the coroutine resumes */
    if (t->live && t->stop_resume_of >= 0 && resumes == t->stop_resume_of && t->stop_reason == 0)
        live_stop(t, STOP_STEP);
    int capture = capturing(t);
    /* a task's coroutine is run by the event loop, not by the user's code below it: an entry of its own */
    Py_ssize_t depth = direct ? t->depth : 0;
    /* sys.monitoring: the traced frame below called this very function (its CALL event named it),
     * so no frame object is needed to tell (making the callee's cost more than the rest of a call's
     * recording: design-notes.md, issue 37). One case it misreads: work the interpreter runs at
     * the callee's start before PY_START (a signal handler, a finalizer, a pending call) that is
     * library code calling this same function: that call is taken as direct. */
    int called_here = frame == NULL && depth > 0 && !info->resumable && t->stack[t->depth - 1].calling == code;
    if (depth > 0)
        t->stack[t->depth - 1].calling = NULL;
    if (frame == NULL && (capture || (depth > 0 && !called_here)))
        frame = PyEval_GetFrame(); /* borrowed: the frame that starts */
    int library = depth > 0 && frame != NULL && !called_here ? called_by_library(t, frame, &t->stack[t->depth - 1]) : 0;
    if (library < 0)
        return -1;
    Entry *e = push(t, code, frame);
    if (e == NULL)
        return -1;
    e->line = line;
    e->code_id = code_id;
    e->bp_lines = info->bp_lines;
    e->resumable = info->resumable;
    e->lines = info->lines;
    e->n_lines = info->n_lines;
    e->first_line = info->resumable ? 0 : info->first_line;
    e->deferred = info->deferred;
    e->defer_flags = info->defer_flags;
    e->defer_lo = info->defer_lo;
    e->defer_n = info->defer_n;
    e->at_calls = info->at_calls;
    e->depth = depth;
    if (t->skeleton) {
        long long caller_last = depth > 0 ? t->stack[t->depth - 2].last : -1;
        unsigned char kind = library ? LIBRARY_CALL : 0;
        long long index = record_event(t, e->inv, line, kind);
        if (index < 0 || record_call(t, code_id, caller_last, resumes) < 0)
            return -1;
        e = &t->stack[t->depth - 1]; /* (the flush may have run Python code: the stack may have moved) */
        e->last = index;
        capture = in_window(t, capture, index);
    }
    if (capture) {
        if (begin_event(t) < 0)
            return -1;
        int bad = snapshot_stack(t, t->depth - 1) < 0 || ensure_dicts(e) < 0;
        PyObject *changes = bad ? NULL : frame_diff(t, e);
        end_event(t);
        if (changes == NULL)
            return -1;
        PyObject *size = PyLong_FromSsize_t(depth);
        PyObject *event = library
            ? Py_BuildValue("(OLliNNLi)", TAG_C, e->inv, code_id, line, size, changes, resumes, 1)
            : resumes >= 0 ? Py_BuildValue("(OLliNNL)", TAG_C, e->inv, code_id, line, size, changes, resumes)
                           : Py_BuildValue("(OLliNN)", TAG_C, e->inv, code_id, line, size, changes);
        if (emit(t, event) < 0)
            return -1;
    }
    return t->skeleton ? skeleton_counted(t) : group_stopped(t);
}

/* A generator's or coroutine's frame leaves: the helper keeps a suspended one to link its resume.
 * 1: it paused (a yield, an await) and may resume; 0: it left for good, or is no generator's. */
static int left_event(Tracer *t, Entry *e, int raised) {
    if (!e->resumable || t->left == NULL)
        return 0;
    PyFrameObject *frame = e->frame != NULL ? e->frame : PyEval_GetFrame();
    if (frame == NULL)
        return 0;
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *rc = PyObject_CallFunction(t->left, "OLO", (PyObject *)frame, e->inv, raised ? Py_True : Py_False);
    leave_context(previous);
    if (rc == NULL)
        return -1;
    int paused = rc == Py_True;
    Py_DECREF(rc);
    return paused;
}

static int line_event_body(Tracer *t, Entry *e, int line);

/* (a replay's turn kept for a captured event passes on once the event is sent: record_grouped) */
static int line_event(Tracer *t, Entry *e, int line) {
    int rc = line_event_body(t, e, line);
    if (t->consume_pending) {
        t->consume_pending = 0;
        group_consume(t);
    }
    return rc;
}

static int line_event_body(Tracer *t, Entry *e, int line) {
    if (t->group != NULL && wait_if_held(t) < 0)
        return -1;
    e->calling = NULL; /* (a call that started no frame, a generator's, is over) */
    live_line(t, e, line, e->pending != NULL);
    int capture = capturing(t);
    if (t->skeleton) {
        long long index = record_event(t, e->inv, line, e->pending != NULL ? 0x81 : 1);
        if (index < 0)
            return -1;
        e->last = index;
        capture = in_window(t, capture, index);
    }
    if (capture) {
        if (begin_event(t) < 0)
            return -1;
        int bad = snapshot_stack(t, t->depth) < 0 || ensure_dicts(e) < 0;
        PyObject *changes = bad ? NULL : frame_diff(t, e);
        if (changes == NULL) {
            end_event(t);
            return -1;
        }
        PyObject *caught = Py_None;
        Py_INCREF(caught);
        if (e->pending != NULL) {
            Py_DECREF(caught);
            caught = call_users(t->bounded, e->pending);
            if (caught == NULL) {
                Py_DECREF(changes);
                end_event(t);
                return -1;
            }
        }
        int rc = emit(t, Py_BuildValue("(OLiNN)", TAG_L, e->inv, line, changes, caught));
        if (rc == 0 && t->group != NULL)
            rc = module_update(t);
        end_event(t);
        if (rc < 0)
            return -1;
    }
    Py_CLEAR(e->pending);
    e->line = line;
    return t->skeleton ? skeleton_counted(t) : group_stopped(t);
}

/* The top frame returns `value`, or exits by the exception `raised` (not NULL). */
static int leave_event_body(Tracer *t, int line, PyObject *value, PyObject *raised);

/* (a replay's turn kept for a captured event passes on once the event is sent: record_grouped) */
static int leave_event(Tracer *t, int line, PyObject *value, PyObject *raised) {
    int rc = leave_event_body(t, line, value, raised);
    if (t->consume_pending) {
        t->consume_pending = 0;
        group_consume(t);
    }
    return rc;
}

static int leave_event_body(Tracer *t, int line, PyObject *value, PyObject *raised) {
    if (t->group != NULL && wait_if_held(t) < 0)
        return -1;
    Entry *e = &t->stack[t->depth - 1];
    live_exit(t, raised != NULL);
    int capture = capturing(t);
    int paused = left_event(t, e, raised != NULL);
    if (paused < 0)
        return -1;
    if (t->skeleton) {
        long long index = record_event(t, e->inv, line, raised != NULL ? 3 : paused ? 2 | SUSPENDED : 2);
        if (index < 0)
            return -1;
        e->last = index;
        capture = in_window(t, capture, index);
    }
    int rc = 0;
    if (capture) {
        if (begin_event(t) < 0)
            return -1;
        if (snapshot_stack(t, t->depth) < 0) {
            end_event(t);
            return -1;
        }
        /* what the frame's last statement changed shows at its return (or exit) event: that moment
         * is the state after it, not the state its last line event showed before it */
        if (e->objs != NULL) {
            PyObject *changes = frame_diff(t, e);
            if (changes == NULL || (changes != Py_None && emit(t, Py_BuildValue("(OLN)", TAG_U, e->inv, changes)) < 0)) {
                end_event(t);
                return -1;
            }
            if (changes == Py_None)
                Py_DECREF(changes);
        }
        if (raised != NULL) {
            PyObject *text = call_users(t->bounded, raised);
            rc = text == NULL ? -1 : emit(t, Py_BuildValue("(OLiN)", TAG_X, e->inv, line, text));
        } else {
            PyObject *enc = call_users(t->value_repr, value);
            rc = enc == NULL ? -1 : emit(t, Py_BuildValue("(OLiN)", TAG_R, e->inv, line, enc));
        }
        if (rc == 0 && t->group != NULL)
            rc = module_update(t); /* (after the exit: an update shows from the latest state on) */
    }
    pop(t);
    /* (a caller with no frame: its frame was not found when first captured; looking again now would
     * start from the callee's frame, which a recursive call cannot tell from the caller's) */
    if (rc == 0 && capture && t->depth > 0 && t->stack[t->depth - 1].objs != NULL && t->stack[t->depth - 1].frame != NULL) {
        /* what the callee changed in its caller's objects shows in the caller right away */
        Entry *caller = &t->stack[t->depth - 1];
        PyObject *changes = frame_diff(t, caller);
        if (changes == NULL)
            rc = -1;
        else if (changes == Py_None)
            Py_DECREF(changes);
        else
            rc = emit(t, Py_BuildValue("(OLN)", TAG_U, caller->inv, changes));
    }
    if (capture)
        end_event(t);
    if (rc < 0)
        return -1;
    return t->skeleton ? skeleton_counted(t) : group_stopped(t);
}

static void set_pending(Entry *e, PyObject *exc) {
    Py_INCREF(exc);
    SET_REF(e->pending, exc);
    if (e->resumable) {
        Py_INCREF(exc);
        SET_REF(e->seen, exc);
    }
}

/* settrace: the frame's exit is an exception that a `finally` (or a `with`'s exit) re-raises, the
 * handled exception of the line events before it no longer pending: its last instruction is
 * RERAISE. (sys.monitoring says PY_UNWIND.) 1, 0, or -1: error. */
static int RERAISE_OP = -1;
static int exits_by_reraise(PyFrameObject *frame) {
    if (RERAISE_OP < 0) {
        PyObject *opcode = PyImport_ImportModule("opcode");
        PyObject *opmap = opcode == NULL ? NULL : PyObject_GetAttrString(opcode, "opmap");
        PyObject *op = opmap == NULL ? NULL : PyMapping_GetItemString(opmap, "RERAISE");
        Py_XDECREF(opcode);
        Py_XDECREF(opmap);
        if (op == NULL)
            return -1;
        RERAISE_OP = (int)PyLong_AsLong(op);
        Py_DECREF(op);
        if (RERAISE_OP < 0)
            return -1;
    }
    /* (attributes: the limited API has no PyFrame_GetLasti; this runs only at an exit with nothing
     * pending of a frame that saw an exception) */
    PyObject *lasti_obj = PyObject_GetAttrString((PyObject *)frame, "f_lasti");
    PyObject *code = PyObject_GetAttrString((PyObject *)frame, "f_code");
    PyObject *bytes = code == NULL ? NULL : PyObject_GetAttrString(code, "co_code");
    Py_XDECREF(code);
    long lasti = lasti_obj == NULL ? -1 : PyLong_AsLong(lasti_obj);
    Py_XDECREF(lasti_obj);
    if (bytes == NULL || PyErr_Occurred()) {
        Py_XDECREF(bytes);
        return -1;
    }
    char *raw = PyBytes_AsString(bytes);
    Py_ssize_t size = PyBytes_Size(bytes);
    int found = raw != NULL && lasti >= 0 && lasti < size && (unsigned char)raw[lasti] == RERAISE_OP;
    Py_DECREF(bytes);
    return found;
}

/* The entry of `frame` when it is the top of our stack, in the traced thread; else NULL. */
static Entry *top_entry(Tracer *t, PyFrameObject *frame) {
    if (!t->active || t->depth == 0 || t->stack[t->depth - 1].frame != frame || !in_traced_thread(t))
        return NULL;
    return &t->stack[t->depth - 1];
}

/* sys.monitoring: the top entry when `code` runs it. Every start of the user's code pushes an
 * entry and every exit pops it, so the innermost user frame of the traced thread is the top entry
 * and comparing code objects is enough: no frame object has to be made per call. */
static Entry *top_entry_of_code(Tracer *t, PyObject *code) {
    if (!t->active || t->depth == 0 || t->stack[t->depth - 1].code != code || !in_traced_thread(t))
        return NULL;
    return &t->stack[t->depth - 1];
}

/* sys.monitoring: the frame of every entry that has none yet, walking out from the running frame.
 * The user frames on the thread's stack are our entries, in order; an entry whose frame is not
 * found keeps NULL (its locals show as none). */
static int find_frames(Tracer *t) {
    PyFrameObject *current = PyEval_GetFrame();
    PyObject *frame = (PyObject *)current;
    Py_XINCREF(frame);
    Py_ssize_t d = t->depth - 1;
    while (frame != NULL && frame != Py_None && d >= 0) {
        PyObject *code = (PyObject *)PyFrame_GetCode((PyFrameObject *)frame);
        int match = code == t->stack[d].code;
        Py_DECREF(code);
        if (match) {
            if (t->stack[d].frame == NULL) {
                Py_INCREF(frame);
                t->stack[d].frame = (PyFrameObject *)frame;
            }
            d--;
        }
        PyObject *back = PyObject_GetAttrString(frame, "f_back");
        Py_DECREF(frame);
        if (back == NULL)
            return -1;
        frame = back;
    }
    Py_XDECREF(frame);
    return 0;
}

/* sys.monitoring: the code's line table, made once per code object by the Python helper. */
static int ensure_line_table(Tracer *t, CodeInfo *info) {
    if (info->n_lines >= 0)
        return 0;
    PyObject *table = call_ours(t->make_line_table, info->code);
    if (table == NULL)
        return -1;
    if (!PyBytes_Check(table)) {
        Py_DECREF(table);
        PyErr_SetString(PyExc_TypeError, "a line table is bytes");
        return -1;
    }
    int rc = PyList_Append(t->line_tables, table); /* the list keeps it */
    Py_DECREF(table);
    if (rc < 0)
        return -1;
    /* child/monitoring.py's line_table: n, n lines, n deferred lines, the first line, the
     * lowest deferred line, whether one is made at a CALL, how many flags follow, the flags */
    Py_ssize_t size = PyBytes_Size(table) / (Py_ssize_t)sizeof(int);
    const int *ints = (const int *)PyBytes_AsString(table);
    Py_ssize_t n = size > 0 ? ints[0] : -1;
    if (n < 0 || size < 2 * n + 5 || ints[2 * n + 4] < 0 || size != 2 * n + 5 + ints[2 * n + 4]) {
        PyErr_SetString(PyExc_ValueError, "a line table is n, n lines, n deferred lines, the first, lowest and flags");
        return -1;
    }
    info->lines = ints + 1;
    info->n_lines = n;
    info->first_line = ints[2 * n + 1];
    info->defer_lo = ints[2 * n + 2];
    info->at_calls = ints[2 * n + 3] != 0;
    info->defer_n = ints[2 * n + 4];
    if (info->defer_n > 0) {
        info->deferred = ints + 1 + n;
        info->defer_flags = ints + 2 * n + 5;
    }
    return 0;
}

/* The line of the instruction at byte `offset`; -1: it has none. */
static inline int line_at(const int *lines, Py_ssize_t n_lines, long offset) {
    long unit = offset / 2;
    return lines != NULL && unit >= 0 && unit < n_lines ? lines[unit] : -1;
}

/* The line of the instruction at byte offset `offset_obj`; -1: it has none, -2: error. */
static int line_in(const int *lines, Py_ssize_t n_lines, PyObject *offset_obj) {
    long offset = PyLong_AsLong(offset_obj);
    if (offset == -1 && PyErr_Occurred())
        return -2;
    return line_at(lines, n_lines, offset);
}

/* The line an exit of the top entry happens at, at byte `offset`; -2: error. */
static int exit_line(Tracer *t, Entry *e, long offset) {
    int line = line_at(e->lines, e->n_lines, offset);
    if (line == -1) { /* an instruction with no line of its own: ask the frame, as f_lineno does */
        if (e->frame == NULL && find_frames(t) < 0)
            return -2;
        line = e->frame != NULL ? PyFrame_GetLineNumber(e->frame) : 0;
    }
    return line;
}

/* -- the PyEval_SetTrace front end (3.11) -------------------------------------------------------- */

/* A frame the recording does not trace (the library's) returns: where it returns into the innermost
 * traced frame, the callback hears of it (the value debugpy shows as `(return) f` there). Which one
 * does is counted, not asked of the frame (PyFrame_GetBack would make a frame object per return):
 * each untraced frame that starts above the innermost traced one counts up, each that leaves down
 * (a generator's resume starts, its yield leaves: settrace reports both). */
static int foreign_return(Tracer *t, PyFrameObject *frame, PyObject *arg) {
    if (t->depth == 0)
        return 0;
    Entry *top = &t->stack[t->depth - 1];
    if (top->foreign <= 0 || --top->foreign > 0 || t->foreign_return == NULL)
        return 0;
    PyObject *callback = t->foreign_return; /* (a reference of its own: the call may turn it off) */
    Py_INCREF(callback);
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *inv = PyLong_FromLongLong(top->inv);
    PyObject *rc = inv == NULL ? NULL
                               : PyObject_CallFunctionObjArgs(callback, (PyObject *)frame, arg == NULL ? Py_None : arg,
                                                              inv, NULL);
    leave_context(previous);
    Py_XDECREF(inv);
    Py_DECREF(callback);
    if (rc == NULL)
        return -1;
    Py_DECREF(rc);
    return 0;
}

static int trace(PyObject *self, PyFrameObject *frame, int what, PyObject *arg) {
    Tracer *t = (Tracer *)self;
    if (!t->active)
        return 0;
    if (what == TRACE_CALL) {
        PyObject *code = (PyObject *)PyFrame_GetCode(frame);
        CodeInfo *info = code_info(t, code);
        Py_DECREF(code); /* the code table keeps it */
        if (info == NULL)
            return -1;
        if (info->user)
            return call_event(t, frame, info, PyFrame_GetLineNumber(frame));
        if (t->depth > 0)
            t->stack[t->depth - 1].foreign++; /* (see foreign_return) */
        /* no line events for code that is not the user's */
        return PyObject_SetAttrString((PyObject *)frame, "f_trace_lines", Py_False);
    }
    Entry *e = top_entry(t, frame);
    if (e == NULL && what == TRACE_RETURN)
        return foreign_return(t, frame, arg);
    if (e == NULL)
        return 0; /* not a frame we trace */
    if (what == TRACE_EXCEPTION) {
        PyObject *value = PyTuple_Check(arg) && PyTuple_Size(arg) >= 2 ? PyTuple_GetItem(arg, 1) : Py_None;
        set_pending(e, value);
        return 0;
    }
    if (what == TRACE_LINE)
        return line_event(t, e, PyFrame_GetLineNumber(frame));
    if (what == TRACE_RETURN) {
        int line = PyFrame_GetLineNumber(frame);
        int reraised = 0;
        if (e->pending == NULL && e->seen != NULL && (arg == NULL || arg == Py_None)) {
            reraised = exits_by_reraise(frame);
            if (reraised < 0)
                return -1;
        }
        if ((e->pending != NULL || reraised) && (arg == NULL || arg == Py_None)) {
            PyObject *raised = e->pending != NULL ? e->pending : e->seen;
            Py_INCREF(raised);
            int rc = leave_event(t, line, NULL, raised);
            Py_DECREF(raised);
            return rc;
        }
        return leave_event(t, line, arg == NULL ? Py_None : arg, NULL);
    }
    return 0;
}

/* -- the sys.monitoring front end (3.12+): the callbacks ---------------------------------------- */

static PyObject *done(int rc) {
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *disable(Tracer *t) {
    Py_INCREF(t->disable);
    return t->disable;
}

/* The line shortcuts below are on until the program installs a trace function or a monitoring tool of
 * its own (child/own_tracers.py): what that tool does at a line would show after the line's event.
 * One switch for the process, as the program's tool is for every thread; a fork (a checkpoint, a
 * replay) keeps its state. */
static int shortcuts = 1;

static PyObject *no_shortcuts(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    shortcuts = 0;
    Py_RETURN_NONE;
}

/* -- a code's first line, made at its start ----------------------------------------------------------
 * Every call of a function runs its first line right after its start: in a recursion that LINE
 * callback was a fifth of all callbacks (issue 37). Where that line can be reached no other way
 * (child/line_shortcuts.py: the instruction right after RESUME starts it, it is the line's only
 * stretch, and no jump or handler lands in it), its line event is made at each start, right after
 * the call's; the LINE that follows is DISABLEd where it fires (and left out, should it fire again:
 * another tool's restart_events). What is DISABLEd is DISABLEd for every thread's tracer: so every
 * tracer makes the event, from the code alone (one that waited to see the LINE first never saw it
 * once another thread's tracer had DISABLEd it). The records are those the LINE callback made. */

/* -- deferred lines -----------------------------------------------------------------------------------
 * (child/line_shortcuts.py) A line that only loads until an instruction with an event of its own (a
 * CALL, a return): its LINE is DISABLEd where it fires, and its event is made at that event, before
 * it, or where an exception leaves the frame before it (PY_UNWIND's offset). No Python code runs
 * in between (no attribute, operator or hash; no eval-breaker check: no signal's handler, no
 * other thread). `deferred[unit]`: L in the line before its event, -L at it. Every other line
 * between two runs of it makes an event of its own (the rules there), so the latest line says
 * whether this run's is made already. */

/* The deferred line of the instruction at byte `offset` of the top entry `e`'s code, made now
 * unless this run of it made it already: 1 if made (the recorder's hook may have run), 0 if not,
 * -1: error. */
static int deferred_line_event(Tracer *t, Entry *e, long offset) {
    long unit = offset / 2;
    if (e->deferred == NULL || unit < 0 || unit >= e->n_lines || e->deferred[unit] == 0)
        return 0;
    int line = e->deferred[unit] < 0 ? -e->deferred[unit] : e->deferred[unit];
    return e->line == line ? 0 : line_event(t, e, line) < 0 ? -1 : 1;
}

/* Whether a LINE of `line` in entry `e`'s code is a deferred line's (its event is made elsewhere). */
static inline int is_deferred_line(Entry *e, int line) {
    return e->defer_n > 0 && (unsigned)(line - e->defer_lo) < (unsigned)e->defer_n && e->defer_flags[line - e->defer_lo];
}

/* Right after a start of `code` is recorded: its first line's event. */
static int first_line_event(Tracer *t, PyObject *code) {
    /* (the start's own callback, in its thread: the entry it pushed is on top unless the hook
     * ended the recording meanwhile) */
    Entry *e = t->active && t->depth > 0 && t->stack[t->depth - 1].code == code ? &t->stack[t->depth - 1] : NULL;
    if (e == NULL || e->first_line <= 0 || !shortcuts)
        return 0;
    e->first_made = 1; /* (set first: nothing of this thread's runs a callback during the event) */
    return line_event(t, e, e->first_line);
}

/* PY_START and PY_RESUME: (code, offset); PY_THROW: (code, offset, exception), a resume too */
static PyObject *mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Tracer *t = (Tracer *)self;
    if (nargs < 1 || !t->active || !in_traced_thread(t))
        Py_RETURN_NONE;
    CodeInfo *info = code_info(t, args[0]);
    if (info == NULL)
        return NULL;
    if (!info->user) {
        /* PY_THROW (3 arguments) cannot be disabled: DISABLE would raise "Cannot disable PY_THROW
         * events" in the program, in place of the exception thrown in */
        if (nargs >= 3)
            Py_RETURN_NONE;
        return disable(t);
    }
    if (!info->enabled) {
        PyObject *rc = call_ours(t->enable, info->code);
        if (rc == NULL)
            return NULL;
        Py_DECREF(rc);
        info->enabled = 1;
        if (ensure_line_table(t, info) < 0)
            return NULL;
    }
    /* a function's start is always at its RESUME: its line is known after the first (no offset to
     * read, at every call) */
    int line = nargs == 2 && info->start_line > 0 ? info->start_line
               : nargs >= 2                       ? line_in(info->lines, info->n_lines, args[1])
                                                  : -1;
    if (line == -2)
        return NULL;
    if (nargs == 2 && !info->resumable && line > 0)
        info->start_line = line;
    if (line == -1) {
        PyFrameObject *frame = PyEval_GetFrame(); /* the frame that starts */
        line = frame != NULL ? PyFrame_GetLineNumber(frame) : 0;
    }
    PyObject *code = args[0];
    if (call_event(t, NULL, info, line) < 0)
        return NULL;
    return done(nargs == 2 ? first_line_event(t, code) : 0);
}

/* LINE: (code, line) */
static PyObject *mon_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Tracer *t = (Tracer *)self;
    Entry *e = nargs >= 2 ? top_entry_of_code(t, args[0]) : NULL;
    if (e == NULL)
        Py_RETURN_NONE;
    int line = (int)PyLong_AsLong(args[1]);
    if (line == -1 && PyErr_Occurred())
        return NULL;
    if (e->first_made) {
        e->first_made = 0;
        if (line == e->first_line)
            return disable(t); /* (its event was made at the start) */
    }
    if (shortcuts && is_deferred_line(e, line))
        return disable(t); /* (its event is made at the line's own event) */
    return done(line_event(t, e, line));
}

/* JUMP: (code, offset, target). settrace reports a backward jump within one line as a new line
 * event (a one-line loop); LINE does not. The Python helper says which jumps are such lines (only
 * in generator expressions: see child/engines.py); every other jump is DISABLEd where it is. */
static PyObject *mon_jump(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Tracer *t = (Tracer *)self;
    if (nargs < 3)
        Py_RETURN_NONE;
    long offset = PyLong_AsLong(args[1]), target = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (target > offset)
        return disable(t);
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *line = PyObject_CallFunctionObjArgs(t->jump_line, args[0], args[1], args[2], NULL);
    leave_context(previous);
    if (line == NULL || line == t->disable)
        return line;
    long number = PyLong_AsLong(line);
    Py_DECREF(line);
    if (number == -1 && PyErr_Occurred())
        return NULL;
    Entry *e = top_entry_of_code(t, args[0]);
    if (e == NULL)
        Py_RETURN_NONE;
    e->first_made = 0;
    return done(line_event(t, e, (int)number));
}

/* PY_RETURN and PY_YIELD: (code, offset, value); PY_UNWIND: (code, offset, exception) */
static PyObject *leave(PyObject *self, PyObject *const *args, Py_ssize_t nargs, int raised) {
    Tracer *t = (Tracer *)self;
    Entry *e = nargs >= 3 ? top_entry_of_code(t, args[0]) : NULL;
    if (e == NULL)
        Py_RETURN_NONE;
    e->first_made = 0; /* (its first line's LINE is not coming any more) */
    long offset = PyLong_AsLong(args[1]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    if (e->deferred != NULL && shortcuts) { /* (a return that is its line's event, or an exception leaving a deferred line) */
        int made = deferred_line_event(t, e, offset);
        if (made < 0)
            return NULL;
        if (made > 0 && (e = top_entry_of_code(t, args[0])) == NULL)
            Py_RETURN_NONE;
    }
    int line = exit_line(t, e, offset);
    if (line == -2)
        return NULL;
    return done(raised ? leave_event(t, line, NULL, args[2]) : leave_event(t, line, args[2], NULL));
}

static PyObject *mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return leave(self, args, nargs, 0); }

static PyObject *mon_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return leave(self, args, nargs, 1); }

/* CALL: (code, offset, callable, first argument), in the user's code only (a local event). A call
 * of a Python function (or a method bound to one) is noted in the calling frame's entry: when that
 * function's start follows, it was called by the traced frame itself (see call_event). A site that
 * calls anything else (a builtin, a class) is DISABLEd: a start that follows one is told by its
 * frame, as before. A site that calls both kinds only loses the shortcut. */
static PyObject *mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Tracer *t = (Tracer *)self;
    Entry *e = nargs >= 3 ? top_entry_of_code(t, args[0]) : NULL;
    if (e == NULL)
        Py_RETURN_NONE;
    e->first_made = 0;
    int made_here = 0; /* a deferred line's event is made at this site: it is never DISABLEd */
    if (e->at_calls && shortcuts) {
        long offset = PyLong_AsLong(args[1]);
        if (offset == -1 && PyErr_Occurred())
            return NULL;
        long unit = offset / 2;
        made_here = unit >= 0 && unit < e->n_lines && e->deferred[unit] < 0;
        int made = made_here ? deferred_line_event(t, e, offset) : 0;
        if (made < 0)
            return NULL;
        if (made > 0 && (e = top_entry_of_code(t, args[0])) == NULL)
            Py_RETURN_NONE;
    }
    PyObject *callable = args[2];
    if ((PyObject *)Py_TYPE(callable) == METHOD_TYPE)
        callable = PyMethod_Function(callable);
    if (callable != NULL && (PyObject *)Py_TYPE(callable) == FUNCTION_TYPE) {
        e->calling = PyFunction_GetCode(callable);
        Py_RETURN_NONE;
    }
    e->calling = NULL;
    if (made_here)
        Py_RETURN_NONE;
    return disable(t);
}

/* EXCEPTION_HANDLED: (code, offset, exception) */
static PyObject *mon_handled(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Tracer *t = (Tracer *)self;
    Entry *e = nargs >= 3 ? top_entry_of_code(t, args[0]) : NULL;
    if (e != NULL && nargs >= 3) {
        e->first_made = 0;
        set_pending(e, args[2]);
    }
    Py_RETURN_NONE;
}

/* -- the Tracer's methods --------------------------------------------------------------------------- */

static PyObject *tracer_start(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Tracer *t = (Tracer *)self;
    t->active = 1;
    t->thread = pthread_self();
    if (!t->monitoring)
        PyEval_SetTrace(trace, self);
    Py_RETURN_NONE;
}

static PyObject *tracer_stop(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Tracer *t = (Tracer *)self;
    t->active = 0;
    if (!t->monitoring)
        PyEval_SetTrace(NULL, NULL);
    Py_RETURN_NONE;
}

static PyObject *tracer_monitoring(PyObject *self, PyObject *args) {
    Tracer *t = (Tracer *)self;
    PyObject *disable_, *enable, *jump_line, *make_line_table, *line_tables = PyList_New(0);
    if (line_tables == NULL)
        return NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &disable_, &enable, &jump_line, &make_line_table)) {
        Py_DECREF(line_tables);
        return NULL;
    }
    PyObject **slots[] = {&t->disable, &t->enable, &t->jump_line, &t->make_line_table};
    PyObject *values[] = {disable_, enable, jump_line, make_line_table};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        Py_INCREF(values[i]);
        SET_REF(*slots[i], values[i]);
    }
    SET_REF(t->line_tables, line_tables);
    t->monitoring = 1;
    Py_RETURN_NONE;
}

static PyObject *tracer_suspensions(PyObject *self, PyObject *args) {
    Tracer *t = (Tracer *)self;
    PyObject *resumed, *left;
    if (!PyArg_ParseTuple(args, "OO", &resumed, &left))
        return NULL;
    Py_INCREF(resumed);
    Py_INCREF(left);
    SET_REF(t->resumed, resumed);
    SET_REF(t->left, left);
    Py_RETURN_NONE;
}

static PyObject *tracer_library(PyObject *self, PyObject *callable) {
    Tracer *t = (Tracer *)self;
    Py_INCREF(callable);
    SET_REF(t->library, callable);
    Py_RETURN_NONE;
}

static PyObject *tracer_foreign_returns(PyObject *self, PyObject *callable) {
    Tracer *t = (Tracer *)self;
    if (callable == Py_None) {
        SET_REF(t->foreign_return, NULL);
        Py_RETURN_NONE;
    }
    Py_INCREF(callable);
    SET_REF(t->foreign_return, callable);
    Py_RETURN_NONE;
}

static PyObject *tracer_skeleton(PyObject *self, PyObject *args, PyObject *kwargs) {
    Tracer *t = (Tracer *)self;
    static char *names[] = {"hook", "flush", "hook_every", "hook_at", "buffer", NULL};
    PyObject *hook, *flush;
    long long hook_every, hook_at;
    Py_ssize_t buffer = 65536;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOLL|n", names, &hook, &flush, &hook_every, &hook_at, &buffer))
        return NULL;
    Py_INCREF(hook);
    Py_INCREF(flush);
    SET_REF(t->hook, hook);
    SET_REF(t->flush, flush);
    t->hook_every = hook_every;
    t->next_every = hook_every > 0 ? (t->count / hook_every + 1) * hook_every : LLONG_MAX;
    t->hook_at = hook_at;
    if (t->ev == NULL) {
        t->ev = PyMem_Malloc(buffer * sizeof(EventRecord));
        t->calls = PyMem_Malloc(1024 * sizeof(CallRecord));
        if (t->ev == NULL || t->calls == NULL)
            return PyErr_NoMemory();
        t->ev_cap = buffer;
        t->calls_cap = 1024;
    }
    t->skeleton = 1;
    if (journal_set_counter != NULL)
        journal_set_counter(&t->count); /* where a replay diverged, in events */
    t->capture_from = 1LL << 62;
    t->capture_to = -1;
    Py_RETURN_NONE;
}

static PyObject *tracer_capture(PyObject *self, PyObject *args) {
    Tracer *t = (Tracer *)self;
    long long first, last;
    if (!PyArg_ParseTuple(args, "LL", &first, &last))
        return NULL;
    t->capture_from = first;
    t->capture_to = last;
    t->snapshotted = 0;
    /* a window stands alone: the frames on the stack are sent whole where it begins (a live
     * recording's stops captured some of them already) */
    for (Py_ssize_t d = 0; d < t->depth; d++) {
        Py_CLEAR(t->stack[d].objs);
        Py_CLEAR(t->stack[d].encs);
        Py_CLEAR(t->stack[d].snaps);
    }
    Py_RETURN_NONE;
}

static PyObject *tracer_flush(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    if (flush_records((Tracer *)self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *tracer_count(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLongLong(((Tracer *)self)->count);
}

/* The traced frames on the stack, outermost first: (frame or None, invocation, code id, depth).
 * What another engine needs to go on where this one stops (a second thread starts: runner.py). */
static PyObject *tracer_entries(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Tracer *t = (Tracer *)self;
    if (find_frames(t) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t d = 0; d < t->depth; d++) {
        Entry *e = &t->stack[d];
        PyObject *item = Py_BuildValue("(OLln)", e->frame != NULL ? (PyObject *)e->frame : Py_None, e->inv, e->code_id, e->depth);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

/* The invocations on the stack, outermost first: no frame is looked for (a frame object made for
 * the recorder's own questions would change when the program's objects are freed, and so when
 * their finalizers run: a replay would not do the same). */
static PyObject *tracer_invocations(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Tracer *t = (Tracer *)self;
    PyObject *list = PyList_New(t->depth);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t d = 0; d < t->depth; d++) {
        PyObject *inv = PyLong_FromLongLong(t->stack[d].inv);
        if (inv == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, d, inv);
    }
    return list;
}

static PyObject *tracer_next_invocation(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLongLong(*((Tracer *)self)->next_inv_p);
}

/* live(stop_at, stop_depth, stop_exit_inv, stop_exceptions, breakpoints[, stop_resume_of]): where the
 * running program stops next (-1: not by that); `breakpoints`: {filename: frozenset(lines)} or None.
 * Each code's and each stacked entry's lines are looked up again. */
static PyObject *tracer_live(PyObject *self, PyObject *args) {
    Tracer *t = (Tracer *)self;
    long long stop_at, stop_depth, stop_exit_inv, stop_resume_of = -1;
    int stop_exceptions;
    PyObject *breakpoints;
    if (!PyArg_ParseTuple(args, "LLLiO|L", &stop_at, &stop_depth, &stop_exit_inv, &stop_exceptions, &breakpoints, &stop_resume_of))
        return NULL;
    if (breakpoints != Py_None && !PyDict_Check(breakpoints)) {
        PyErr_SetString(PyExc_TypeError, "breakpoints: a dict or None");
        return NULL;
    }
    PyObject *old = t->breakpoints;
    t->breakpoints = breakpoints == Py_None ? NULL : breakpoints;
    Py_XINCREF(t->breakpoints);
    for (Py_ssize_t i = 0; i < t->codes_cap; i++) {
        CodeInfo *info = &t->codes[i];
        if (info->code == NULL)
            continue;
        info->bp_lines = NULL;
        if (t->breakpoints != NULL && info->user) {
            PyObject *filename = PyObject_GetAttrString(info->code, "co_filename");
            if (filename == NULL) {
                Py_XDECREF(old);
                return NULL;
            }
            info->bp_lines = PyDict_GetItemWithError(t->breakpoints, filename);
            Py_DECREF(filename);
            if (info->bp_lines == NULL && PyErr_Occurred()) {
                Py_XDECREF(old);
                return NULL;
            }
        }
    }
    for (Py_ssize_t d = 0; d < t->depth; d++) {
        Entry *e = &t->stack[d];
        CodeInfo *info = find_slot(t->codes, t->codes_cap, e->code);
        e->bp_lines = info->code == e->code ? info->bp_lines : NULL;
    }
    Py_XDECREF(old);
    t->stop_at = stop_at;
    t->stop_depth = stop_depth;
    t->stop_exit_inv = stop_exit_inv;
    t->stop_resume_of = stop_resume_of;
    t->stop_exceptions = stop_exceptions;
    t->stop_reason = 0;
    t->live = 1;
    Py_RETURN_NONE;
}

/* Why the hook is called now (0: not a live stop), and the next stop by count from here
 * (`stop_here(count)`: a pause). */
static PyObject *tracer_stop_reason(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Tracer *t = (Tracer *)self;
    int reason = t->stop_reason;
    t->stop_reason = 0;
    return PyLong_FromLong(reason);
}

/* (a group of skeletons) the index of the latest live stop's event (-1: none). */
static PyObject *tracer_stop_index(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLongLong(((Tracer *)self)->stop_index);
}

static PyObject *tracer_stop_at(PyObject *self, PyObject *arg) {
    Tracer *t = (Tracer *)self;
    long long at = PyLong_AsLongLong(arg);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    t->stop_at = at;
    t->live = 1;
    Py_RETURN_NONE;
}

static int tracer_init(Tracer *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"events", "user_cache", "judge", "code_ids", "code_id", "encode_atom", "encode_object", "value_repr", "bounded", "dotted", NULL};
    PyObject *events, *user_cache, *judge_, *code_ids, *code_id, *encode_atom, *encode_object, *value_repr, *bounded;
    int dotted = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OO!OOOOO|p", names, &PyList_Type, &events, &PyDict_Type, &user_cache,
                                     &judge_, &PyDict_Type, &code_ids, &code_id, &encode_atom, &encode_object, &value_repr, &bounded,
                                     &dotted))
        return -1;
    self->stop_at = self->stop_depth = self->stop_exit_inv = self->stop_resume_of = -1;
    self->stop_index = -1;
    self->ordinal = -1;
    self->dotted = dotted;
    self->next_inv_p = &self->next_inv;
    PyObject **slots[] = {&self->events, &self->user_cache, &self->judge, &self->code_ids, &self->code_id,
                          &self->encode_atom, &self->encode_object, &self->value_repr, &self->bounded};
    PyObject *values[] = {events, user_cache, judge_, code_ids, code_id, encode_atom, encode_object, value_repr, bounded};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        Py_INCREF(values[i]);
        SET_REF(*slots[i], values[i]);
    }
    return 0;
}

static void tracer_dealloc(Tracer *self) {
    while (self->depth > 0)
        pop(self);
    PyMem_Free(self->stack);
    for (Py_ssize_t i = 0; i < self->codes_cap; i++)
        Py_XDECREF(self->codes[i].code);
    PyMem_Free(self->codes);
    PyObject *refs[] = {self->events, self->user_cache, self->judge, self->code_ids, self->code_id, self->encode_atom,
                        self->encode_object, self->value_repr, self->bounded, self->hook, self->flush,
                        self->disable, self->enable, self->jump_line, self->line_tables,
                        self->make_line_table, self->resumed, self->left, self->library, self->foreign_return,
                        self->breakpoints, self->seen};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        Py_XDECREF(refs[i]);
    PyMem_Free(self->ev);
    PyMem_Free(self->calls);
    if (self->shared != NULL) {
        for (int i = 0; i < SHARED_MODULES; i++)
            clear_shared(&self->shared[i]);
        PyMem_Free(self->shared);
    }
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    freefunc free_ = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_(self);
    Py_DECREF(type);
}

static PyMethodDef tracer_methods[] = {
    {"start", tracer_start, METH_NOARGS, "Trace this thread from now on (sys.monitoring: once the callbacks are registered)."},
    {"stop", tracer_stop, METH_NOARGS, "Stop tracing."},
    {"monitoring", tracer_monitoring, METH_VARARGS,
     "monitoring(DISABLE, enable, jump_line, line_table): be the sys.monitoring callbacks (on_*), not a settrace function."},
    {"on_start", (PyCFunction)(void (*)(void))mon_start, METH_FASTCALL, "PY_START / PY_RESUME callback."},
    {"on_line", (PyCFunction)(void (*)(void))mon_line, METH_FASTCALL, "LINE callback."},
    {"on_jump", (PyCFunction)(void (*)(void))mon_jump, METH_FASTCALL, "JUMP callback."},
    {"on_return", (PyCFunction)(void (*)(void))mon_return, METH_FASTCALL, "PY_RETURN / PY_YIELD callback."},
    {"on_unwind", (PyCFunction)(void (*)(void))mon_unwind, METH_FASTCALL, "PY_UNWIND callback."},
    {"on_handled", (PyCFunction)(void (*)(void))mon_handled, METH_FASTCALL, "EXCEPTION_HANDLED callback."},
    {"on_call", (PyCFunction)(void (*)(void))mon_call, METH_FASTCALL, "CALL callback (see mon_call)."},
    {"skeleton", (PyCFunction)(void (*)(void))tracer_skeleton, METH_VARARGS | METH_KEYWORDS,
     "skeleton(hook, flush, hook_every, hook_at): record only the skeleton from now on."},
    {"capture", tracer_capture, METH_VARARGS, "capture(first, last): full capture for events first..last."},
    {"suspensions", tracer_suspensions, METH_VARARGS,
     "suspensions(resumed, left): link each resume of a generator or coroutine to the invocation it continues."},
    {"foreign_returns", tracer_foreign_returns, METH_O,
     "foreign_returns(callable(frame, value, inv) or None): settrace: hear of each untraced frame returning into the innermost traced one."},
    {"library", tracer_library, METH_O,
     "library(is_library): is_library(code) says whether a frame under a traced call that is not the traced frame below it runs library code."},
    {"flush", tracer_flush, METH_NOARGS, "Hand the buffered skeleton records to the flush callable."},
    {"count", tracer_count, METH_NOARGS, "Events so far."},
    {"entries", tracer_entries, METH_NOARGS, "The traced frames on the stack: (frame, invocation, code id, depth), outermost first."},
    {"invocations", tracer_invocations, METH_NOARGS, "invocations(): the invocations on the stack, outermost first."},
    {"next_invocation", tracer_next_invocation, METH_NOARGS, "The id the next invocation gets."},
    {"live", tracer_live, METH_VARARGS,
     "live(stop_at, stop_depth, stop_exit_inv, stop_exceptions, breakpoints[, stop_resume_of]): where the running program stops next."},
    {"stop_index", tracer_stop_index, METH_NOARGS, "(a group of skeletons) The index of the latest live stop's event (-1: none)."},
    {"stop_reason", tracer_stop_reason, METH_NOARGS, "Why the hook is called now (0: not a live stop); clears it."},
    {"stop_at", tracer_stop_at, METH_O, "stop_at(count): stop at that event (a pause: the next one)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot tracer_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, tracer_init},
    {Py_tp_dealloc, tracer_dealloc},
    {Py_tp_methods, tracer_methods},
    {Py_tp_doc, "The recording tracer (see child/engines.py for what it records)."},
    {0, NULL},
};

static PyType_Spec tracer_spec = {
    .name = "neural_dap.trace._ctracer.Tracer",
    .basicsize = sizeof(Tracer),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = tracer_slots,
};


/* -- every thread: a recording that met a second thread goes on in full, in C ----------------------
 *
 * One Tracer per thread, each with its own stack, all appending to the one event list and numbering
 * invocations as one (the group's counter). The sys.monitoring callbacks are the group's: each finds
 * the calling thread's tracer (thread-local storage; a thread's first event makes one with the
 * Python factory, which says None for the recorder's own threads) and hands the event to it, so a
 * tracer's state is only ever touched by its own thread, even where a repr lets the GIL go. On 3.11
 * each thread's C trace function is its own tracer (PyEval_SetTrace is per thread). Before the first
 * event of each run of one thread's events comes that thread's record (the Python marker says which,
 * as child/threads.py's ThreadTable numbers them). A thread's tracer is dropped once the thread
 * has ended (a server starts a thread per request). */


/* One call of a lock's acquiring methods in a recording: the lock, whether it was taken (1), not
 * taken (0: a call that does not block) or raised (-1), and, for a take, how many takes of that lock
 * came before it. */
typedef struct LockStep {
    long long lock;
    long long pos;
    int ok;
} LockStep;

struct Group {
    PyObject_HEAD
    PyObject *factory;   /* callable() -> a Tracer for the calling thread, or None (one of the recorder's own) */
    PyObject *marker;    /* callable(switched) -> (the thread record to send first, or None; its name not known yet) */
    PyObject *tracers;   /* list: every thread's Tracer */
    Tracer *current;     /* whose events were appended last (borrowed; NULL: none yet) */
    pthread_t last_thread; /* the thread of the latest callback ... */
    Tracer *last_tracer;   /* ... and its tracer (NULL: none yet) */
    long long next_inv;
    int monitoring;
    int stopped;         /* no thread is recorded any more (a thread's first event after it gets no tracer) */
    /* a live recording (child/frontier.py): a thread stopped for the adapter calls on_stop(reason)
     * right after its event is recorded, and holds every other thread meanwhile: each calls hold()
     * at its next event, which returns once the stopped thread has been told to go on (release) */
    PyObject *on_stop;   /* callable(reason) or NULL */
    PyObject *hold;      /* callable() or NULL */
    volatile int held;   /* a thread is stopped: the others wait at their next event */
    Tracer *holder;      /* (borrowed) the stopped thread's tracer */
    int skeletons;       /* made with skeleton=True: the adopted tracer becomes the sink */
    /* Every thread as skeletons (`skeleton=True`): every tracer writes to the adopted one's
     * stream (its records, its count, its hook), and each run of one thread's events is preceded,
     * in the event list, by ["ts", index of its first event, thread number(, name)]: the schedule. */
    Tracer *sink;        /* a reference; NULL: every event in full */
    PyObject *number_of; /* callable() -> the calling thread's number in the thread table, or None */
    /* A replay under a recorded schedule (`follow`): runs of (thread number, events); a thread
     * records an event only in a run of its own, and waits (the GIL released) for one otherwise. */
    long long *schedule; /* 2 * runs numbers; NULL: no schedule */
    Py_ssize_t runs, run; /* how many, and the current one */
    long long left;      /* events left in the current run */
    double patience;     /* seconds a thread waits while the schedule does not move: then it is given up */
    volatile int diverged; /* the schedule was given up: every thread runs free */
    const char *why;     /* ... because (the first reason: a constant text, or why_text) */
    char why_text[200];
    pthread_mutex_t lock;
    pthread_cond_t turn;
    /* A recording of skeletons hands the GIL over at events (`timeslice`): with the interpreter's
     * own switch interval made long, a thread that has run for `slice` seconds lets the others run
     * at its next event, so a run ends at an event or where its thread blocks, never in the middle
     * of a line, where a replay could not end it. */
    double slice;        /* 0: no hand-over at events */
    /* Locks (gate_locks): which thread takes a lock is decided in the kernel, not at an event, so a
     * replay that follows the schedule can still hand a lock to another thread than the recording
     * did. The recording numbers each lock as it is first taken and sends, for every call of a
     * lock's acquiring methods by a thread of the program, ["lk", thread, its call number, lock,
     * outcome, order] (`order`: the take's place among its lock's, record_take); a replay given
     * them (`locks`, in that order) lets each such call take its lock only in the order the
     * recording's takes had, and returns a recorded failure (a lock not taken) as one. */
    int gating;              /* the lock types' acquiring methods are this process's gate (below) */
    PyObject *lock_ids;      /* dict: id(lock) -> (weak reference, lock number) */
    long long next_lock;     /* (recording) the next lock's number */
    long long next_order;    /* (recording) the next take's place in its lock's order */
    /* takes made so far (said, or followed): with the events, how far the threads have gone, for
     * the journal, which answers a thread's call no sooner than the recording's returned */
    volatile long long takes;
    struct LockStep **plan;  /* (replay) per thread number: each of its calls, in order */
    Py_ssize_t *plan_len;
    Py_ssize_t plan_threads;
    long long *lock_pos;     /* (replay) per lock: the takes made so far */
    Py_ssize_t locks;
    double run_began;    /* when the current run began (monotonic seconds) */
    unsigned tick;       /* events since the clock was last read */
};

static int wait_if_held(Tracer *t) {
    Group *g = t->group;
    if (!g->held || g->holder == t || g->hold == NULL)
        return 0;
    PyObject *rc = call_ours(g->hold, Py_None);
    if (rc == NULL)
        return -1;
    Py_DECREF(rc);
    return 0;
}

static int group_stopped(Tracer *t) {
    Group *g = t->group;
    if (g == NULL || t->stop_reason == 0)
        return 0;
    int reason = t->stop_reason;
    t->stop_reason = 0;
    if (g->on_stop == NULL)
        return 0;
    PyObject *arg = PyLong_FromLong(reason);
    if (arg == NULL)
        return -1;
    g->holder = t;
    g->held = 1;
    PyObject *rc = call_ours(g->on_stop, arg);
    Py_DECREF(arg);
    g->held = 0; /* (released already, unless on_stop failed) */
    g->holder = NULL;
    if (rc == NULL)
        return -1;
    Py_DECREF(rc);
    return 0;
}

/* A replay's current run is the calling thread's (or there is no schedule to follow any more). */
static int my_turn(Group *g, Tracer *t) {
    return g->schedule == NULL || g->diverged || g->run >= g->runs || g->schedule[2 * g->run] == t->ordinal;
}

/* The recorder's own clock (the journal's plumbing: never one of the program's reads, which the
 * journal keeps for a replay). */
static double monotonic_seconds(void) {
    struct timespec now;
    int previous = enter_context(JOURNAL_PLUMBING);
    clock_gettime(CLOCK_MONOTONIC, &now);
    leave_context(previous);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

/* One wait of at most 20 ms on the group's condition (its lock held): a wait's patience is checked
 * between them. */
static void wait_a_little(Group *g) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&g->turn, &g->lock, &until);
}

/* The recorded order is given up (a wait whose patience is over, a call it does not know): every
 * thread runs free (the group's lock held). */
static void order_given_up(Group *g, const char *why) {
    if (g->why == NULL)
        g->why = why;
    g->diverged = 1;
    pthread_cond_broadcast(&g->turn);
}

#define THE_TURN (-1)       /* wait_for: until the current run is the thread's */
#define THE_SCHEDULE_END (-2) /* ... until the schedule is followed to its end */

static int schedule_ended(Group *g) { return g->schedule == NULL || g->diverged || g->run >= g->runs; }

/* What wait_for waits for has come (the group's lock held). */
static int waited_enough(Group *g, Tracer *t, long long lock, long long pos) {
    return lock == THE_TURN           ? my_turn(g, t)
           : lock == THE_SCHEDULE_END ? schedule_ended(g)
                                      : g->diverged || g->lock_pos[lock] >= pos;
}

/* Wait, the GIL released, until the current run is this thread's (`lock` THE_TURN), until the
 * schedule is over (THE_SCHEDULE_END), or until `pos` takes of `lock` are made. A wait during which
 * the replay does not move (no run ends; no take of that lock) for `patience` seconds gives the
 * recorded order up: a thread blocked where the recording's was not (the replay went another way),
 * or one the schedule has no run for. */
static void wait_for(Group *g, Tracer *t, long long lock, long long pos) {
    /* Nothing to wait for: the GIL is kept. Let go, it lets another thread run code no event or
     * take orders (the recording's thread went on holding it): a logging cache filled first by
     * the other thread, which then took a lock the recording's had not. */
    pthread_mutex_lock(&g->lock);
    int ready = waited_enough(g, t, lock, pos);
    pthread_mutex_unlock(&g->lock);
    if (ready)
        return;
    int previous = enter_context(JOURNAL_PLUMBING);
    PyThreadState *state = PyEval_SaveThread();
    pthread_mutex_lock(&g->lock);
    /* (runs and takes only grow: their sum moves when either does) */
    long long seen = g->run + (lock >= 0 ? g->lock_pos[lock] : 0);
    double since = monotonic_seconds();
    while (!waited_enough(g, t, lock, pos)) {
        wait_a_little(g);
        long long moved = g->run + (lock >= 0 ? g->lock_pos[lock] : 0);
        if (moved != seen) {
            seen = moved;
            since = monotonic_seconds();
        } else if (monotonic_seconds() - since > g->patience) {
            if (g->why == NULL) {
                long long whose = g->run < g->runs ? g->schedule[2 * g->run] : -1;
                if (lock == THE_SCHEDULE_END)
                    snprintf(g->why_text, sizeof g->why_text,
                             "thread %lld took a lock the recording's never took before it ended, and the "
                             "replay did not reach that end: thread %lld's run %lld of %lld never ended",
                             t->ordinal, whose, (long long)g->run, (long long)g->runs);
                else if (lock == THE_TURN)
                    snprintf(g->why_text, sizeof g->why_text,
                             "no thread could go on in its turn: thread %lld waited for a run of its own, "
                             "thread %lld's run %lld of %lld never ended (%lld events left; event %lld)",
                             t->ordinal, whose, (long long)g->run, (long long)g->runs, g->left, g->sink ? g->sink->count : -1);
                else
                    snprintf(g->why_text, sizeof g->why_text,
                             "a lock's next take in the recording's order never came: thread %lld waited for "
                             "take %lld of lock %lld, %lld were made (the current run: thread %lld's, %lld of %lld; event %lld)",
                             t->ordinal, pos, lock, g->lock_pos[lock], whose, (long long)g->run, (long long)g->runs, g->sink ? g->sink->count : -1);
                g->why = g->why_text;
            }
            order_given_up(g, NULL);
        }
    }
    pthread_mutex_unlock(&g->lock);
    PyEval_RestoreThread(state);
    leave_context(previous);
}

/* The calling thread's number, asked of the thread table once (-2: it has none, so no run of the
 * schedule can be its: the schedule is given up). */
static int known_ordinal(Group *g, Tracer *t) {
    if (t->ordinal != -1)
        return 0;
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *number = PyObject_CallNoArgs(g->number_of);
    leave_context(previous);
    if (number == NULL)
        return -1;
    t->ordinal = number == Py_None ? -2 : PyLong_AsLongLong(number);
    Py_DECREF(number);
    if (t->ordinal == -1 && PyErr_Occurred())
        return -1;
    if (t->ordinal == -2) {
        pthread_mutex_lock(&g->lock);
        if (g->why == NULL)
            g->why = "a thread ran that the recording had not started";
        g->diverged = 1;
        pthread_cond_broadcast(&g->turn);
        pthread_mutex_unlock(&g->lock);
    }
    return 0;
}

/* Before an event of a group of skeletons is recorded: wait for a replay's turn, make room in the
 * stream, mark a change of thread. Each may run Python code (another thread may record meanwhile),
 * so all are looked at again after any one, until none is needed. */
static int group_turn(Tracer *t) {
    Group *g = t->group;
    if (g->sink == NULL)
        return 0;
    Tracer *s = g->sink;
    int named = 0;
    for (;;) {
        if (g->schedule != NULL && !g->diverged && g->number_of != NULL && t->ordinal == -1) {
            if (known_ordinal(g, t) < 0)
                return -1;
            continue;
        }
        if (!my_turn(g, t)) {
            wait_for(g, t, THE_TURN, 0);
            continue;
        }
        if (s->ev_len == s->ev_cap) {
            if (flush_records(s) < 0)
                return -1;
            continue;
        }
        if (g->current != t || (t->unnamed && !named)) {
            named = 1;
            if (mark_thread(t) < 0)
                return -1;
            g->run_began = g->slice > 0 ? monotonic_seconds() : 0;
            continue;
        }
        if (s->count >= s->hook_at || s->count >= s->next_every) {
            long long due = s->count;
            /* (the hook is Python code: another thread may come here meanwhile, and must not find it
             * due again and call it at the same count; call_hook moves next_every on first) */
            s->hook_at = LLONG_MAX;
            if (call_hook(s, due) < 0)
                return -1;
            if (s->hook_at <= due)
                s->hook_at = due + 1; /* (due at this very count again: at the next, as counted's would be) */
            continue;
        }
        if (g->slice > 0 && (++g->tick & 255) == 0 && monotonic_seconds() - g->run_began > g->slice) {
            /* the slice is over: let another thread have the GIL here, at an event (a thread waiting
             * for it takes it meanwhile; 50 us is what CPython's own hand-over takes) */
            int previous = enter_context(JOURNAL_PLUMBING);
            PyThreadState *state = PyEval_SaveThread();
            struct timespec pause = {0, 50 * 1000};
            nanosleep(&pause, NULL);
            PyEval_RestoreThread(state);
            leave_context(previous);
            g->run_began = monotonic_seconds();
            continue;
        }
        return 0;
    }
}

/* Right after a replay's event is recorded: the run's last event hands the turn to the next run's
 * thread at once. (The rest of this thread's line then runs beside the next run's events: it may
 * block in C, a join or a lock, that only the next run's thread releases.) */
static void group_consume(Tracer *t) {
    Group *g = t->group;
    if (g->schedule == NULL || g->diverged || g->run >= g->runs || --g->left > 0)
        return;
    pthread_mutex_lock(&g->lock);
    do
        g->run++;
    while (g->run < g->runs && g->schedule[2 * g->run + 1] <= 0);
    g->left = g->run < g->runs ? g->schedule[2 * g->run + 1] : 0;
    pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->lock);
}

static PyObject *TRACER_TYPE;
static __thread Group *tls_group;   /* the group the calling thread's tracer is in ... */
static __thread Tracer *tls_tracer; /* ... and the tracer (NULL: a thread of the recorder's own) */
static pthread_key_t gone_key;      /* its destructor marks a thread's tracer gone when the thread ends */

static void thread_gone(void *tracer) { ((Tracer *)tracer)->gone = 1; }

/* Dict versions change at every change of a dict on these releases only (see dict_version). */
static int dict_versions(void) { return Py_Version >= 0x030B0000 && Py_Version < 0x030E0000; }

static unsigned long long version_of(PyObject *dict);

/* A group of skeletons: the thread record ["t", number(, name)] as the start of a run,
 * ["ts", index of the run's first event, number(, name)]. */
static int append_run(Group *g, Tracer *t, PyObject *record) {
    if (!PyList_Check(record) || PyList_Size(record) < 2) {
        PyErr_SetString(PyExc_TypeError, "a thread record is [\"t\", number(, name)]");
        return -1;
    }
    PyObject *run = PyList_GetSlice(record, 0, PyList_Size(record));
    if (run == NULL)
        return -1;
    PyObject *tag = PyUnicode_FromString("ts");
    if (tag == NULL || PyList_SetItem(run, 0, tag) < 0) { /* (steals tag) */
        Py_DECREF(run);
        return -1;
    }
    long long number = PyLong_AsLongLong(PyList_GetItem(run, 1));
    if (number == -1 && PyErr_Occurred()) {
        Py_DECREF(run);
        return -1;
    }
    if (t->ordinal == -1)
        t->ordinal = number;
    /* (taken last, right before the append: making the lists may have let another thread record) */
    PyObject *index = PyLong_FromLongLong(g->sink->ev_first + g->sink->ev_len);
    int rc = index == NULL ? -1 : PyList_Insert(run, 1, index);
    Py_XDECREF(index);
    if (rc == 0)
        rc = PyList_Append(t->events, run);
    Py_DECREF(run);
    return rc;
}

/* Before the first event of a run of this thread's events: its thread record. */
static int mark_thread(Tracer *t) {
    Group *g = t->group;
    if (g->current == t && !t->unnamed)
        return 0;
    for (;;) {
        int switched = g->current != t;
        PyObject *answer = call_ours(g->marker, switched ? Py_True : Py_False);
        if (answer == NULL)
            return -1;
        PyObject *record;
        int unnamed;
        if (!PyArg_ParseTuple(answer, "Op", &record, &unnamed)) {
            Py_DECREF(answer);
            return -1;
        }
        if (!switched && g->current != t && record == Py_None) {
            /* another thread's events came while it ran: this one needs its number again (a
             * record that came carries it, and maybe its name: it is sent, never asked again) */
            Py_DECREF(answer);
            continue;
        }
        g->current = t;
        t->unnamed = unnamed;
        int rc = record == Py_None ? 0 : g->sink != NULL ? append_run(g, t, record) : PyList_Append(t->events, record);
        Py_DECREF(answer);
        return rc;
    }
}

/* Drop the tracers of threads that have ended. The survivors go into a new list first: freeing a
 * tracer frees the frames and values it held, whose finalizers may let the GIL go to a thread that
 * prunes too. */
static int prune(Group *g) {
    Py_ssize_t n = PyList_Size(g->tracers), gone = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        gone += ((Tracer *)PyList_GetItem(g->tracers, i))->gone != 0;
    if (gone == 0)
        return 0;
    PyObject *alive = PyList_New(0);
    if (alive == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Tracer *t = (Tracer *)PyList_GetItem(g->tracers, i);
        if (!t->gone) {
            if (PyList_Append(alive, (PyObject *)t) < 0) {
                Py_DECREF(alive);
                return -1;
            }
            continue;
        }
        if (g->current == t)
            g->current = NULL;
        if (g->last_tracer == t)
            g->last_tracer = NULL;
    }
    PyObject *old = g->tracers;
    g->tracers = alive;
    Py_DECREF(old);
    return 0;
}

static void join_group(Group *g, Tracer *t) {
    t->group = g;
    g->next_inv = g->next_inv > *t->next_inv_p ? g->next_inv : *t->next_inv_p;
    t->next_inv_p = &g->next_inv;
    t->thread = pthread_self();
    if (g->sink != NULL) { /* every thread as skeletons: records to the one stream, nothing captured */
        t->skeleton = 1;
        t->sink = t == g->sink ? NULL : g->sink;
        if (t != g->sink) {
            /* a replay's window (Skeleton's worker) is every thread's: each sends its stack whole at
             * its first event in it */
            t->capture_from = g->sink->capture_from;
            t->capture_to = g->sink->capture_to;
            t->snapshotted = 0;
        }
    } else {
        t->skeleton = 0; /* every event in full */
    }
    pthread_setspecific(gone_key, t);
    tls_group = g;
    tls_tracer = t;
    g->last_thread = t->thread;
    g->last_tracer = t;
}

/* The calling thread's tracer in `*out` (NULL: a thread of the recorder's own); -1: error. */
static int thread_tracer(Group *g, Tracer **out) {
    /* the thread of the latest callback, most of the time (the GIL passes every few milliseconds):
     * its id compared, no thread-local lookup (a function call in a shared library). An ended
     * thread's id may be reused by a new thread, but only after its tracer was marked gone */
    Tracer *last = g->last_tracer;
    if (last != NULL && pthread_equal(g->last_thread, pthread_self()) && !last->gone) {
        *out = last;
        return 0;
    }
    if (tls_group == g && tls_tracer != NULL) {
        g->last_thread = pthread_self();
        g->last_tracer = tls_tracer;
    }
    if (tls_group == g || g->stopped) {
        *out = tls_group == g ? tls_tracer : NULL;
        return 0;
    }
    tls_group = g; /* (while the factory runs: its own calls are no events) */
    tls_tracer = NULL;
    *out = NULL;
    if (prune(g) < 0)
        return -1;
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *made = PyObject_CallNoArgs(g->factory);
    leave_context(previous);
    if (made == NULL)
        return -1;
    if (made == Py_None) {
        Py_DECREF(made);
        return 0;
    }
    if ((PyObject *)Py_TYPE(made) != TRACER_TYPE) {
        Py_DECREF(made);
        PyErr_SetString(PyExc_TypeError, "the factory makes a Tracer or None");
        return -1;
    }
    int rc = PyList_Append(g->tracers, made);
    Py_DECREF(made); /* (the list keeps it) */
    if (rc < 0)
        return -1;
    join_group(g, (Tracer *)made);
    ((Tracer *)made)->active = 1;
    *out = (Tracer *)made;
    return 0;
}

/* The <module> invocation on another thread's stack whose globals are `globals`; -1: none. */
static long long module_shown_by_others(Tracer *t, PyObject *globals) {
    Group *g = t->group;
    for (Py_ssize_t i = 0; i < PyList_Size(g->tracers); i++) {
        Tracer *other = (Tracer *)PyList_GetItem(g->tracers, i);
        if (other == NULL || other == t)
            continue;
        for (Py_ssize_t d = 0; d < other->depth; d++) {
            Entry *e = &other->stack[d];
            if (!e->module_scope || e->objs == NULL)
                continue;
            if (e->globals == NULL && e->frame != NULL) {
                e->globals = PyObject_GetAttrString((PyObject *)e->frame, "f_globals");
                if (e->globals == NULL) {
                    PyErr_Clear();
                    continue;
                }
            }
            if (e->globals == globals)
                return e->inv;
        }
    }
    return -1;
}

/* This thread's shadow of `globals` (made on first sight); NULL: error. */
static SharedModule *shared_module(Tracer *t, PyObject *globals) {
    if (t->shared == NULL && (t->shared = PyMem_Calloc(SHARED_MODULES, sizeof(SharedModule))) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    SharedModule *free_slot = NULL;
    for (int i = 0; i < SHARED_MODULES; i++) {
        if (t->shared[i].globals == globals)
            return &t->shared[i];
        if (t->shared[i].globals == NULL && free_slot == NULL)
            free_slot = &t->shared[i];
    }
    SharedModule *m = free_slot != NULL ? free_slot : &t->shared[((uintptr_t)globals >> 4) % SHARED_MODULES];
    clear_shared(m);
    Py_INCREF(globals);
    m->globals = globals;
    m->inv = module_shown_by_others(t, globals);
    m->versioned = 0;
    m->objs = PyDict_New();
    m->encs = PyDict_New();
    m->snaps = PyDict_New();
    if (m->objs == NULL || m->encs == NULL || m->snaps == NULL) {
        clear_shared(m);
        return NULL;
    }
    return m;
}

/* After an event of a frame whose module's globals another thread's stack shows (its <module>
 * frame, waiting in a join while a worker changes them): what changed there since this thread
 * last looked, as an update of that frame ("u"), so a stop in any thread shows the globals as they
 * are then (child/engines.py's SharedGlobals, the Python engines' same rule). */
static int module_update(Tracer *t) {
    PyObject *globals = PyEval_GetGlobals(); /* borrowed: the running frame's */
    if (globals == NULL || !PyDict_CheckExact(globals))
        return 0;
    SharedModule *m = shared_module(t, globals);
    if (m == NULL)
        return -1;
    if (m->inv < 0)
        return 0;
    if (dict_versions()) {
        /* no name bound, rebound or deleted since, and no value shown that can change in place */
        unsigned long long version = version_of(globals);
        if (m->versioned && version == m->version && PyDict_Size(m->encs) == 0)
            return 0;
        m->version = version;
        m->versioned = 1;
    }
    PyObject *copy = PyDict_Copy(globals); /* (a repr lets the GIL go: another thread may change them) */
    if (copy == NULL)
        return -1;
    Entry shadow;
    memset(&shadow, 0, sizeof(shadow));
    shadow.module_scope = 1;
    shadow.objs = m->objs;
    shadow.encs = m->encs;
    shadow.snaps = m->snaps;
    long long inv = m->inv;
    PyObject *changes = diff(t, &shadow, copy);
    Py_DECREF(copy);
    if (changes == NULL)
        return -1;
    if (changes == Py_None) {
        Py_DECREF(changes);
        return 0;
    }
    return emit(t, Py_BuildValue("(OLN)", TAG_U, inv, changes));
}

static int group_init(Group *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"factory", "marker", "monitoring", "skeleton", "number_of", NULL};
    PyObject *factory, *marker, *number_of = Py_None;
    int monitoring, skeletons = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOp|pO", names, &factory, &marker, &monitoring, &skeletons, &number_of))
        return -1;
    self->skeletons = skeletons;
    if (number_of != Py_None)
        SET_REF(self->number_of, Py_NewRef(number_of));
    if (pthread_mutex_init(&self->lock, NULL) != 0 || pthread_cond_init(&self->turn, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "cannot make the group's lock");
        return -1;
    }
    PyObject *tracers = PyList_New(0);
    if (tracers == NULL)
        return -1;
    Py_INCREF(factory);
    Py_INCREF(marker);
    SET_REF(self->factory, factory);
    SET_REF(self->marker, marker);
    SET_REF(self->tracers, tracers);
    self->monitoring = monitoring;
    /* never freed: a thread's key destructor may mark one of its tracers as the process ends, and
     * the recording child ends with the program */
    Py_INCREF((PyObject *)self);
    return 0;
}

/* adopt(tracer): the tracer that recorded the calling thread (the main thread) until now goes on in
 * full, in the group: its buffered records are flushed, and every frame on its stack is sent
 * whole (a snapshot: its locals now), as a capture window begins. */
static PyObject *group_adopt(PyObject *self, PyObject *arg) {
    Group *g = (Group *)self;
    if ((PyObject *)Py_TYPE(arg) != TRACER_TYPE) {
        PyErr_SetString(PyExc_TypeError, "adopt: a Tracer");
        return NULL;
    }
    Tracer *t = (Tracer *)arg;
    if (g->skeletons) {
        /* every thread as skeletons: this tracer's stream goes on, every thread's records in it */
        if (!t->skeleton || t->ev == NULL) {
            PyErr_SetString(PyExc_ValueError, "adopt: a group of skeletons adopts a tracer in skeleton mode");
            return NULL;
        }
        if (PyList_Append(g->tracers, arg) < 0)
            return NULL;
        g->sink = (Tracer *)Py_NewRef(arg);
        join_group(g, t);
        if (journal_set_takes != NULL) /* (and whether the order is given up: then nothing waits for it) */
            journal_set_takes((const long long *)&g->takes, &g->diverged);
        t->live = 0;
        t->stop_at = t->stop_depth = t->stop_exit_inv = t->stop_resume_of = -1;
        t->stop_reason = 0;
        g->current = NULL; /* (its next event opens the first run: ["ts", its index, 0]) */
        Py_RETURN_NONE;
    }
    if (t->skeleton && flush_records(t) < 0)
        return NULL;
    if (t->monitoring && find_frames(t) < 0)
        return NULL;
    if (PyList_Append(g->tracers, arg) < 0)
        return NULL;
    join_group(g, t);
    /* the predicates of the single-threaded recording count events, which no tracer of the group
     * counts: a live recording sets the group's anew (child/frontier.py) */
    t->live = 0;
    t->stop_at = t->stop_depth = t->stop_exit_inv = t->stop_resume_of = -1;
    t->stop_reason = 0;
    g->current = t; /* (the thread table numbers this thread 0: its events need no record first) */
    /* Not in a callback (the main thread's signal handler): the reprs the snapshots make are the
     * program's code and would be events of this very tracer, pushing frames that may move its
     * stack. It is inactive meanwhile, and each entry is found again after its repr. */
    int was_active = t->active; /* (0: the main thread switches quietly, threads.py) */
    t->active = 0;
    PyObject *rc = Py_None;
    for (Py_ssize_t d = 0; d < t->depth && rc != NULL; d++) {
        Py_CLEAR(t->stack[d].objs);
        Py_CLEAR(t->stack[d].encs);
        Py_CLEAR(t->stack[d].snaps);
        if (ensure_dicts(&t->stack[d]) < 0) {
            rc = NULL;
            break;
        }
        PyObject *changes = frame_diff(t, &t->stack[d]);
        Entry *e = &t->stack[d];
        if (changes == NULL ||
            emit(t, Py_BuildValue("(OLliNN)", TAG_S, e->inv, e->code_id, e->line, PyLong_FromSsize_t(e->depth), changes)) < 0)
            rc = NULL;
    }
    t->active = was_active;
    if (rc == NULL)
        return NULL;
    Py_RETURN_NONE;
}

/* take(frame[, event, arg]): in a thread that had started before the group (its first call was
 * waiting for the switch), or, on 3.11, as the trace function `threading` gives each new thread:
 * from now on the thread's events come to its tracer, and the frame starting is its first call. */
static PyObject *group_take(PyObject *self, PyObject *args) {
    Group *g = (Group *)self;
    PyObject *frame, *event = NULL, *arg = NULL;
    if (!PyArg_ParseTuple(args, "O|OO", &frame, &event, &arg))
        return NULL;
    Tracer *t;
    if (thread_tracer(g, &t) < 0)
        return NULL;
    if (g->monitoring || t == NULL)
        PyEval_SetTrace(NULL, NULL); /* (sys.settrace(None): its legacy trace function brought it here) */
    else
        PyEval_SetTrace(trace, (PyObject *)t); /* 3.11: this thread's events to its tracer */
    /* sys.monitoring calls the legacy trace function's tool before the recorder's: this frame's
     * PY_START comes next, to the group, which records its call */
    if (t == NULL || g->monitoring)
        Py_RETURN_NONE;
    PyObject *code = (PyObject *)PyFrame_GetCode((PyFrameObject *)frame);
    CodeInfo *info = code_info(t, code);
    Py_DECREF(code); /* the code table keeps it */
    if (info == NULL)
        return NULL;
    if (!info->user || (t->depth > 0 && t->stack[t->depth - 1].code == info->code))
        Py_RETURN_NONE;
    return done(call_event(t, (PyFrameObject *)frame, info, PyFrame_GetLineNumber((PyFrameObject *)frame)));
}

static PyObject *group_stop(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Group *g = (Group *)self;
    g->stopped = 1;
    for (Py_ssize_t i = 0; i < PyList_Size(g->tracers); i++)
        ((Tracer *)PyList_GetItem(g->tracers, i))->active = 0;
    if (!g->monitoring)
        PyEval_SetTrace(NULL, NULL); /* (this thread's; the others' tracers are inactive) */
    Py_RETURN_NONE;
}

/* live(on_stop, hold): stop threads for the adapter (see Group); (None, None): no more. */
static PyObject *group_live(PyObject *self, PyObject *args) {
    Group *g = (Group *)self;
    PyObject *on_stop, *hold;
    if (!PyArg_ParseTuple(args, "OO", &on_stop, &hold))
        return NULL;
    PyObject *old_stop = g->on_stop, *old_hold = g->hold;
    g->on_stop = on_stop == Py_None ? NULL : Py_NewRef(on_stop);
    g->hold = hold == Py_None ? NULL : Py_NewRef(hold);
    Py_XDECREF(old_stop);
    Py_XDECREF(old_hold);
    Py_RETURN_NONE;
}

static PyObject *group_held(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(((Group *)self)->held);
}

/* stop_here(tracer): the calling thread (whose tracer it is) is stopped now, between two events (a
 * pause in the main thread's signal handler): the others wait at their next event until release. */
static PyObject *group_stop_here(PyObject *self, PyObject *arg) {
    Group *g = (Group *)self;
    if ((PyObject *)Py_TYPE(arg) != TRACER_TYPE) {
        PyErr_SetString(PyExc_TypeError, "stop_here: a Tracer");
        return NULL;
    }
    g->holder = (Tracer *)arg;
    g->held = 1;
    Py_RETURN_NONE;
}

static PyObject *group_release(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Group *g = (Group *)self;
    g->held = 0;
    g->holder = NULL;
    Py_RETURN_NONE;
}

/* The tracers of the threads alive (a copy of the list). */
static PyObject *group_tracers(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Group *g = (Group *)self;
    if (prune(g) < 0)
        return NULL;
    return PyList_GetSlice(g->tracers, 0, PyList_Size(g->tracers));
}

static PyObject *group_next_invocation(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLongLong(((Group *)self)->next_inv);
}

/* follow(schedule, patience): a replay records each event only in a run of its thread's, in the
 * order `schedule` gives (native int64 pairs: thread number, events in the run). */
static PyObject *group_follow(PyObject *self, PyObject *args) {
    Group *g = (Group *)self;
    Py_buffer view;
    double patience;
    if (!PyArg_ParseTuple(args, "y*d", &view, &patience))
        return NULL;
    if (g->number_of == NULL || view.len % (2 * (Py_ssize_t)sizeof(long long)) != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "follow: pairs of int64, in a group made with number_of");
        return NULL;
    }
    long long *copy = PyMem_Malloc(view.len > 0 ? view.len : 1);
    if (copy == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memcpy(copy, view.buf, view.len);
    Py_ssize_t runs = view.len / (2 * (Py_ssize_t)sizeof(long long));
    PyBuffer_Release(&view);
    pthread_mutex_lock(&g->lock);
    long long *old = g->schedule;
    g->schedule = copy;
    g->runs = runs;
    g->run = 0;
    while (g->run < g->runs && g->schedule[2 * g->run + 1] <= 0)
        g->run++;
    g->left = g->run < g->runs ? g->schedule[2 * g->run + 1] : 0;
    g->patience = patience;
    g->diverged = 0;
    g->why = NULL;
    pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->lock);
    PyMem_Free(old);
    Py_RETURN_NONE;
}

/* timeslice(seconds): a recording of skeletons lets another thread run at an event once its thread
 * has run that long (0: never; see Group.slice). */
static PyObject *group_timeslice(PyObject *self, PyObject *arg) {
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred())
        return NULL;
    ((Group *)self)->slice = seconds;
    Py_RETURN_NONE;
}

/* (runs followed so far, runs in the schedule, whether it was given up, why or None) */
static PyObject *group_following(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Group *g = (Group *)self;
    return Py_BuildValue("nnOz", g->run, g->runs, g->diverged ? Py_True : Py_False, g->diverged ? g->why : NULL);
}

/* -- locks taken in the recording's order (see Group.gating) ------------------------------------- */

enum {
    GATE_LOCK_ACQUIRE,
    GATE_LOCK_ENTER,
    GATE_RLOCK_ACQUIRE,
    GATE_RLOCK_ENTER,
    GATE_RLOCK_RESTORE,
    GATE_QUEUE_GET,
    GATE_QUEUE_GET_NOWAIT,
    GATE_QUEUE_PUT,
    GATE_QUEUE_PUT_NOWAIT,
    GATES
};
static PyObject *gate_original[GATES]; /* the methods gated: the lock types are the process's, as is the gate */
static PyObject *queue_empty;          /* _queue.Empty: a queue's get that took nothing */
static Group *gate_group;              /* the group whose gate they are (a process has one recording) */

static PyObject *call_original(int which, PyObject *self, PyObject *args, PyObject *kwargs) {
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *all = PyTuple_New(n + 1);
    if (all == NULL)
        return NULL;
    PyTuple_SetItem(all, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SetItem(all, i + 1, Py_NewRef(PyTuple_GetItem(args, i)));
    PyObject *rc = PyObject_Call(gate_original[which], all, kwargs);
    Py_DECREF(all);
    return rc;
}

/* The original call of a take the gate says or follows, in the recorder's context: what it reads
 * inside (the clock, for a timeout's deadline) is the journal's in neither (a replay makes the call
 * with its own patience, or after the recording's outcome, never as the program did). */
static PyObject *take_unjournaled(int which, PyObject *self, PyObject *args, PyObject *kwargs) {
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *rc = call_original(which, self, args, kwargs);
    leave_context(previous);
    return rc;
}

static int is_acquire(int which) { return which == GATE_LOCK_ACQUIRE || which == GATE_RLOCK_ACQUIRE; }
static int is_get(int which) { return which == GATE_QUEUE_GET || which == GATE_QUEUE_GET_NOWAIT; }
static int is_queue(int which) { return which >= GATE_QUEUE_GET; }

/* A call's outcome: 1 it took its lock (an item), 0 it took none (False; a queue's Empty), -1 it
 * raised otherwise. */
static int outcome_of(int which, PyObject *rc) {
    if (rc == NULL)
        return is_get(which) && PyErr_ExceptionMatches(queue_empty) ? 0 : -1;
    return is_acquire(which) ? PyObject_IsTrue(rc) : 1;
}

/* The number `lock` has in this process (-2: none yet; -1: error). */
static long long lock_number(Group *g, PyObject *lock) {
    PyObject *key = PyLong_FromVoidPtr(lock);
    if (key == NULL)
        return -1;
    PyObject *entry = PyDict_GetItemWithError(g->lock_ids, key);
    Py_DECREF(key);
    if (entry == NULL)
        return PyErr_Occurred() ? -1 : -2;
    /* (an entry of a lock that has died names another object at the same address: none) */
    if (PyWeakref_GetObject(PyTuple_GetItem(entry, 0)) != lock)
        return -2;
    return PyLong_AsLongLong(PyTuple_GetItem(entry, 1));
}

static int name_lock(Group *g, PyObject *lock, long long number) {
    PyObject *key = PyLong_FromVoidPtr(lock);
    PyObject *ref = PyWeakref_NewRef(lock, NULL);
    PyObject *entry = ref == NULL ? NULL : Py_BuildValue("(OL)", ref, number);
    int rc = key == NULL || entry == NULL ? -1 : PyDict_SetItem(g->lock_ids, key, entry);
    Py_XDECREF(key);
    Py_XDECREF(ref);
    Py_XDECREF(entry);
    return rc;
}

/* Where a take is decided. A lock is taken as its acquire returns (the log says it then, the lock
 * held). A queue's item is taken as get returns on 3.11 and 3.12, but from 3.13 a put hands its item
 * to the thread parked longest in get, so the item a get receives is decided when it *starts*: the
 * order of the calls' starts is the order of the items. */
static int decided_at_start(int which) { return Py_Version >= 0x030D0000 && is_get(which); }

/* The lock's number (numbered as first taken), or -1 (its error cleared: the take goes unsaid). */
static long long numbered_lock(Group *g, PyObject *self) {
    long long number = lock_number(g, self);
    if (number == -2) {
        number = g->next_lock++;
        if (name_lock(g, self, number) < 0)
            number = -1;
    }
    if (number < 0)
        PyErr_Clear();
    return number;
}

/* A recording: the call made, then said ["lk", thread, call, lock, outcome, order] (an exception it
 * raised is kept meanwhile): `order` places the take among the takes of its lock (where it was
 * decided: decided_at_start), so the log may say takes out of that order. */
static PyObject *record_take(Group *g, Tracer *t, long long call, int which, PyObject *self, PyObject *args, PyObject *kwargs) {
    long long number = -1, order = -1;
    if (decided_at_start(which)) {
        number = numbered_lock(g, self);
        order = g->next_order++;
        g->takes++;
    }
    PyObject *rc = take_unjournaled(which, self, args, kwargs);
    int ok = outcome_of(which, rc);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (order < 0) {
        number = numbered_lock(g, self);
        order = g->next_order++;
        if (ok == 1)
            g->takes++;
    }
    PyObject *said =
        number < 0 ? NULL : Py_BuildValue("[sLLLiL]", "lk", t->ordinal, call, number, ok < 0 ? -1 : ok, order);
    if (said == NULL || PyList_Append(t->events, said) < 0)
        /* (the call was made: the program keeps what it got, its lock or its item; the record is
         * lost, and a replay that needs it goes its own way and says so) */
        PyErr_Clear();
    Py_XDECREF(said);
    PyErr_Restore(type, value, traceback);
    return rc;
}

static void give_up(Group *g, const char *why) {
    pthread_mutex_lock(&g->lock);
    order_given_up(g, why);
    pthread_mutex_unlock(&g->lock);
}

/* One more take of `lock` is made (a replay): the next one in the recording's order may go. */
static void took(Group *g, long long lock) {
    pthread_mutex_lock(&g->lock);
    g->lock_pos[lock]++;
    g->takes++;
    pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->lock);
}

/* A replay: the call takes its lock only once the takes the recording made before it are made, and
 * a call that took none there takes none here. */
static PyObject *follow_take(Group *g, Tracer *t, long long call, int which, PyObject *self, PyObject *args, PyObject *kwargs) {
    if (g->diverged || t->ordinal < 0)
        return take_unjournaled(which, self, args, kwargs);
    if (t->ordinal >= g->plan_threads || call >= g->plan_len[t->ordinal]) {
        /* A call the recording has no take for never returned while it recorded (a recording that
         * ended at its limit ends with threads blocked in a take): made free before the schedule's
         * end, it would take a lock the recording's threads went on taking, and they would wait. */
        wait_for(g, t, THE_SCHEDULE_END, 0);
        return take_unjournaled(which, self, args, kwargs);
    }
    LockStep *step = &g->plan[t->ordinal][call];
    if (step->ok < 0)
        return take_unjournaled(which, self, args, kwargs);
    long long number = lock_number(g, self);
    if (number == -1)
        return NULL;
    if (number == -2 && name_lock(g, self, step->lock) < 0)
        return NULL;
    if (number >= 0 && number != step->lock) { /* another lock than the recording's: the replay went another way */
        pthread_mutex_lock(&g->lock);
        if (g->why == NULL) {
            snprintf(g->why_text, sizeof g->why_text,
                     "thread %lld's call %lld of a lock's (or queue's) methods was of lock %lld, the recording's of lock %lld",
                     t->ordinal, call, number, step->lock);
            g->why = g->why_text;
        }
        pthread_mutex_unlock(&g->lock);
        give_up(g, NULL);
        return take_unjournaled(which, self, args, kwargs);
    }
    if (step->ok == 0 && is_get(which)) {
        if (decided_at_start(which))
            g->takes++; /* (counted as it started, as the recording counted it) */
        PyErr_SetNone(queue_empty);
        return NULL;
    }
    if (step->ok == 0)
        Py_RETURN_FALSE;
    wait_for(g, t, step->lock, step->pos);
    if (decided_at_start(which)) { /* (the next take may start now: it parks behind this one) */
        took(g, step->lock);
        return take_unjournaled(which, self, args, kwargs);
    }
    PyObject *rc;
    if (is_acquire(which) && !g->diverged) {
        /* (taken when its turn comes, however long the holder keeps it; a hold longer than the
         * patience gives the order up, and the call is made as the program made it) */
        /* (at most an hour: a longer timeout, infinity too, overflows the lock's own limit) */
        PyObject *wait = Py_BuildValue("(Od)", Py_True, g->patience < 3600.0 ? g->patience : 3600.0);
        /* (the wait reads the recorder's clock, as the recording's call did: take_unjournaled) */
        rc = wait == NULL ? NULL : take_unjournaled(which, self, wait, NULL);
        Py_XDECREF(wait);
        if (rc == NULL || rc == Py_False) {
            if (rc == NULL)
                PyErr_Clear(); /* (the program's own call below raises what it raises) */
            Py_XDECREF(rc);
            give_up(g, "a lock was held longer than the patience where the recording's was free");
            rc = take_unjournaled(which, self, args, kwargs);
        }
    } else {
        rc = take_unjournaled(which, self, args, kwargs);
    }
    if (rc != NULL)
        took(g, step->lock);
    return rc;
}

/* The calling thread's number in the thread table (-1: it has none; -3: error). A thread's number is
 * known as it starts (the thread table numbers threads in the order they are started), before it
 * runs any code of the user's: a pool's worker takes its queue's items in library code. */
static long long gate_ordinal(Group *g, Tracer *t) {
    if (t->ordinal >= 0 || g->number_of == NULL)
        return t->ordinal;
    int previous = enter_context(JOURNAL_PLUMBING);
    PyObject *number = PyObject_CallNoArgs(g->number_of);
    leave_context(previous);
    if (number == NULL)
        return -3;
    long long ordinal = number == Py_None ? -1 : PyLong_AsLongLong(number);
    Py_DECREF(number);
    if (ordinal == -1 && PyErr_Occurred())
        return -3;
    if (ordinal >= 0)
        t->ordinal = ordinal;
    return ordinal;
}

/* ND_JOURNAL_TRACE=1: each call the gate sees goes into the journal's trace (finding out why a
 * replay of threads gave their order up). */
static void (*journal_trace_line)(const char *);
static void gate_trace(Tracer *t, long long call, int which, PyObject *self, const char *how) {
    if (journal_trace_line == NULL)
        return;
    char line[200];
    snprintf(line, sizeof line, "[gate %d] %s thread=%lld call=%lld which=%d object=%p event=%lld\n", (int)getpid(), how,
             t->ordinal, call, which, (void *)self, gate_group && gate_group->sink ? gate_group->sink->count : -1);
    journal_trace_line(line);
}

static PyObject *gated(int which, PyObject *self, PyObject *args, PyObject *kwargs) {
    Group *g = gate_group;
    if (g == NULL || !g->gating || g->sink == NULL || g->stopped)
        return call_original(which, self, args, kwargs);
    int previous = enter_context(JOURNAL_PLUMBING);
    leave_context(previous);
    /* the recorder's own code (a flush, the hook), and what it runs of the program's for the user
     * (a repr of a value shown at a live stop: no replay makes it) */
    if (previous == JOURNAL_PLUMBING || previous == JOURNAL_SANDBOX)
        return call_original(which, self, args, kwargs);
    Tracer *t;
    if (thread_tracer(g, &t) < 0) /* (a thread of the program that has run none of the user's code: made now) */
        return NULL;
    if (t != NULL && t->in_event)
        /* the recorder's reprs of the values it captures (a replay's window; the recording captured
         * none): `repr(thread)` asks `is_alive()`, which tries the thread's lock */
        return call_original(which, self, args, kwargs);
    long long ordinal = t == NULL ? -1 : gate_ordinal(g, t);
    if (ordinal == -3)
        return NULL;
    if (ordinal < 0) /* one of the recorder's threads, or one the table has no number for */
        return call_original(which, self, args, kwargs);
    long long call = t->lock_calls++;
    gate_trace(t, call, which, self, g->plan == NULL ? "rec" : "rep");
    return g->plan == NULL ? record_take(g, t, call, which, self, args, kwargs)
                           : follow_take(g, t, call, which, self, args, kwargs);
}

#define GATE(name, which)                                                                          \
    static PyObject *gate_##name(PyObject *self, PyObject *args, PyObject *kwargs) {               \
        return gated(which, self, args, kwargs);                                                   \
    }
GATE(lock_acquire, GATE_LOCK_ACQUIRE)
GATE(lock_enter, GATE_LOCK_ENTER)
GATE(rlock_acquire, GATE_RLOCK_ACQUIRE)
GATE(rlock_enter, GATE_RLOCK_ENTER)
GATE(rlock_restore, GATE_RLOCK_RESTORE)
GATE(queue_get, GATE_QUEUE_GET)
GATE(queue_get_nowait, GATE_QUEUE_GET_NOWAIT)
GATE(queue_put, GATE_QUEUE_PUT)
GATE(queue_put_nowait, GATE_QUEUE_PUT_NOWAIT)

static PyMethodDef gate_defs[GATES] = {
    {"acquire", (PyCFunction)(void (*)(void))gate_lock_acquire, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__enter__", (PyCFunction)(void (*)(void))gate_lock_enter, METH_VARARGS | METH_KEYWORDS, NULL},
    {"acquire", (PyCFunction)(void (*)(void))gate_rlock_acquire, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__enter__", (PyCFunction)(void (*)(void))gate_rlock_enter, METH_VARARGS | METH_KEYWORDS, NULL},
    {"_acquire_restore", (PyCFunction)(void (*)(void))gate_rlock_restore, METH_VARARGS | METH_KEYWORDS, NULL},
    {"get", (PyCFunction)(void (*)(void))gate_queue_get, METH_VARARGS | METH_KEYWORDS, NULL},
    {"get_nowait", (PyCFunction)(void (*)(void))gate_queue_get_nowait, METH_VARARGS | METH_KEYWORDS, NULL},
    {"put", (PyCFunction)(void (*)(void))gate_queue_put, METH_VARARGS | METH_KEYWORDS, NULL},
    {"put_nowait", (PyCFunction)(void (*)(void))gate_queue_put_nowait, METH_VARARGS | METH_KEYWORDS, NULL},
};

static char *copy_text(const char *text);

/* gate_locks(lock_type, its dict, rlock_type, its dict, queue_type, its dict): the acquiring methods
 * of `_thread.lock` and `_thread.RLock`, and `_queue.SimpleQueue.get` (whose waiting takers the
 * kernel chooses between too: a thread pool's workers), become the gate (the types' own dicts: the
 * types are immutable). Their documentation stays the originals'. Once a process. */
static PyObject *group_gate_locks(PyObject *self, PyObject *args) {
    Group *g = (Group *)self;
    PyObject *lock_type, *lock_dict, *rlock_type, *rlock_dict, *queue_type, *queue_dict;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!", &PyType_Type, &lock_type, &PyDict_Type, &lock_dict, &PyType_Type,
                          &rlock_type, &PyDict_Type, &rlock_dict, &PyType_Type, &queue_type, &PyDict_Type, &queue_dict))
        return NULL;
    if (gate_group != NULL && gate_group != g) {
        PyErr_SetString(PyExc_RuntimeError, "gate_locks: the locks are another group's gate");
        return NULL;
    }
    if (g->lock_ids == NULL && (g->lock_ids = PyDict_New()) == NULL)
        return NULL;
    if (gate_original[0] == NULL) {
        PyObject *module = PyImport_ImportModule("_queue");
        queue_empty = module == NULL ? NULL : PyObject_GetAttrString(module, "Empty");
        Py_XDECREF(module);
        if (queue_empty == NULL)
            return NULL;
        for (int which = 0; which < GATES; which++) {
            PyObject *dict = is_queue(which) ? queue_dict : which >= GATE_RLOCK_ACQUIRE ? rlock_dict : lock_dict;
            PyObject *original = PyDict_GetItemString(dict, gate_defs[which].ml_name);
            if (original == NULL) {
                PyErr_Format(PyExc_TypeError, "gate_locks: no %s to gate", gate_defs[which].ml_name);
                return NULL;
            }
            gate_original[which] = Py_NewRef(original);
            /* the original's documentation, its signature line first (inspect.signature reads it) */
            PyObject *doc = PyObject_GetAttrString(original, "__doc__");
            PyErr_Clear();
            PyObject *signature = PyObject_GetAttrString(original, "__text_signature__");
            PyErr_Clear();
            if (doc == NULL || !PyUnicode_Check(doc)) {
                Py_XDECREF(doc);
                doc = PyUnicode_FromString("");
            }
            PyObject *whole = signature != NULL && PyUnicode_Check(signature) && doc != NULL
                ? PyUnicode_FromFormat("%s%U\n--\n\n%U", gate_defs[which].ml_name, signature, doc)
                : Py_XNewRef(doc);
            PyErr_Clear();
            const char *text = whole != NULL && PyUnicode_Check(whole) ? PyUnicode_AsUTF8AndSize(whole, NULL) : NULL;
            if (text != NULL)
                gate_defs[which].ml_doc = copy_text(text);
            Py_XDECREF(whole);
            Py_XDECREF(signature);
            Py_XDECREF(doc);
            PyErr_Clear();
        }
        for (int which = 0; which < GATES; which++) {
            int queue = is_queue(which), rlock = !queue && which >= GATE_RLOCK_ACQUIRE;
            PyObject *type = queue ? queue_type : rlock ? rlock_type : lock_type;
            PyObject *dict = queue ? queue_dict : rlock ? rlock_dict : lock_dict;
            PyObject *gate = PyDescr_NewMethod((PyTypeObject *)type, &gate_defs[which]);
            if (gate == NULL || PyDict_SetItemString(dict, gate_defs[which].ml_name, gate) < 0) {
                Py_XDECREF(gate);
                return NULL;
            }
            Py_DECREF(gate);
        }
        PyType_Modified((PyTypeObject *)lock_type);
        PyType_Modified((PyTypeObject *)rlock_type);
        PyType_Modified((PyTypeObject *)queue_type);
    }
    gate_group = g;
    g->gating = 1;
    Py_RETURN_NONE;
}

/* locks(takes): a replay takes locks in the recording's order: int64 quads (thread, its call number,
 * lock, outcome), in the order the recording said them (a call nested in another, a signal
 * handler's in a blocked acquire, is said first: each is placed by its thread and number). */
static PyObject *group_locks(PyObject *self, PyObject *arg) {
    Group *g = (Group *)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t quads = view.len / (4 * (Py_ssize_t)sizeof(long long));
    const long long *q = view.buf;
    long long threads = 0, locks = 0;
    int bad = view.len % (4 * (Py_ssize_t)sizeof(long long)) != 0 || g->plan != NULL;
    for (Py_ssize_t i = 0; i < quads && !bad; i++) {
        long long thread = q[4 * i], call = q[4 * i + 1], lock = q[4 * i + 2], ok = q[4 * i + 3];
        /* (thread, call and lock numbers are counted from 0 as they come: never past the count) */
        bad = thread < 0 || thread > quads || call < 0 || call > quads || lock < 0 || lock > quads || ok < -1 || ok > 1;
        threads = thread + 1 > threads ? thread + 1 : threads;
        locks = lock + 1 > locks ? lock + 1 : locks;
    }
    Py_ssize_t *len = bad ? NULL : PyMem_Calloc(threads + 1, sizeof(Py_ssize_t));
    LockStep **plan = bad || len == NULL ? NULL : PyMem_Calloc(threads + 1, sizeof(LockStep *));
    long long *pos = plan == NULL ? NULL : PyMem_Calloc(locks + 1, sizeof(long long));
    for (Py_ssize_t i = 0; i < quads && pos != NULL; i++) /* (each thread's calls: as many as its largest number) */
        if (q[4 * i + 1] + 1 > len[q[4 * i]])
            len[q[4 * i]] = q[4 * i + 1] + 1;
    for (long long t = 0; t < threads && pos != NULL && !bad; t++) {
        plan[t] = PyMem_Calloc(len[t] + 1, sizeof(LockStep));
        bad = plan[t] == NULL;
        for (Py_ssize_t c = 0; !bad && c < len[t]; c++)
            plan[t][c].ok = 2; /* (not said yet) */
    }
    if (pos != NULL && !bad) {
        long long *taken = PyMem_Calloc(locks + 1, sizeof(long long));
        bad = taken == NULL;
        for (Py_ssize_t i = 0; i < quads && !bad; i++) {
            LockStep *step = &plan[q[4 * i]][q[4 * i + 1]];
            bad = step->ok != 2; /* (a call said twice) */
            step->lock = q[4 * i + 2];
            step->ok = (int)q[4 * i + 3];
            step->pos = step->ok == 1 ? taken[step->lock]++ : 0;
        }
        for (long long t = 0; t < threads && !bad; t++) /* (every call of a thread said, once) */
            for (Py_ssize_t c = 0; !bad && c < len[t]; c++)
                bad = plan[t][c].ok == 2;
        PyMem_Free(taken);
    }
    PyBuffer_Release(&view);
    if (bad || pos == NULL) {
        for (long long t = 0; plan != NULL && t < threads; t++)
            PyMem_Free(plan[t]);
        PyMem_Free(plan);
        PyMem_Free(len);
        PyMem_Free(pos);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "locks: int64 quads (thread, call, lock, outcome), every call of each thread once");
        return NULL;
    }
    if (g->lock_ids == NULL && (g->lock_ids = PyDict_New()) == NULL)
        return NULL;
    pthread_mutex_lock(&g->lock);
    g->plan = plan;
    g->plan_len = len;
    g->plan_threads = threads;
    g->lock_pos = pos;
    g->locks = locks;
    pthread_mutex_unlock(&g->lock);
    Py_RETURN_NONE;
}

static PyObject *group_threads(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(PyList_Size(((Group *)self)->tracers));
}

/* The sys.monitoring callbacks: to the calling thread's tracer (none for the recorder's threads). */
#define FORWARD(name, callback)                                                                    \
    static PyObject *group_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {       \
        Tracer *t;                                                                                 \
        if (thread_tracer((Group *)self, &t) < 0)                                                  \
            return NULL;                                                                           \
        if (t == NULL)                                                                             \
            Py_RETURN_NONE;                                                                        \
        return callback((PyObject *)t, args, nargs);                                               \
    }
FORWARD(on_start, mon_start)
FORWARD(on_line, mon_line)
FORWARD(on_jump, mon_jump)
FORWARD(on_return, mon_return)
FORWARD(on_unwind, mon_unwind)
FORWARD(on_handled, mon_handled)
FORWARD(on_call, mon_call)

static void group_dealloc(Group *self) {
    Py_XDECREF(self->factory);
    Py_XDECREF(self->marker);
    Py_XDECREF(self->tracers);
    Py_XDECREF(self->on_stop);
    Py_XDECREF(self->hold);
    Py_XDECREF((PyObject *)self->sink);
    Py_XDECREF(self->number_of);
    PyMem_Free(self->schedule);
    Py_XDECREF(self->lock_ids);
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    freefunc free_ = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_(self);
    Py_DECREF(type);
}

static PyMethodDef group_methods[] = {
    {"adopt", group_adopt, METH_O, "adopt(tracer): the calling thread's tracer goes on in full, in the group."},
    {"take", group_take, METH_VARARGS, "take(frame[, event, arg]): the calling thread's events come to its tracer from now on."},
    {"stop", group_stop, METH_NOARGS, "Stop tracing every thread."},
    {"next_invocation", group_next_invocation, METH_NOARGS, "The id the next invocation gets."},
    {"live", group_live, METH_VARARGS, "live(on_stop, hold): a thread stopped for the adapter calls on_stop(reason), the others hold()."},
    {"held", group_held, METH_NOARGS, "Whether a thread is stopped (the others wait)."},
    {"release", group_release, METH_NOARGS, "The stopped thread goes on: the others may too."},
    {"stop_here", group_stop_here, METH_O, "stop_here(tracer): the calling thread is stopped now; the others wait."},
    {"tracers", group_tracers, METH_NOARGS, "The tracers of the threads alive."},
    {"threads", group_threads, METH_NOARGS, "How many threads' tracers are kept (those ended are dropped)."},
    {"follow", group_follow, METH_VARARGS,
     "follow(schedule, patience): record each event only in a run of its thread's (int64 pairs: thread number, events)."},
    {"following", group_following, METH_NOARGS, "(runs followed, runs in the schedule, given up)."},
    {"timeslice", group_timeslice, METH_O, "timeslice(seconds): hand the GIL over at an event once a thread has run that long."},
    {"gate_locks", group_gate_locks, METH_VARARGS,
     "gate_locks(lock_type, its dict, rlock_type, its dict): every call of a lock's acquiring methods by a thread of "
     "the group is said (\"lk\"), or, given `locks`, takes its lock in the recording's order."},
    {"locks", group_locks, METH_O, "locks(takes): int64 quads (thread, call, lock, outcome) a replay takes locks by."},
    {"on_start", (PyCFunction)(void (*)(void))group_on_start, METH_FASTCALL, "PY_START / PY_RESUME callback."},
    {"on_line", (PyCFunction)(void (*)(void))group_on_line, METH_FASTCALL, "LINE callback."},
    {"on_jump", (PyCFunction)(void (*)(void))group_on_jump, METH_FASTCALL, "JUMP callback."},
    {"on_return", (PyCFunction)(void (*)(void))group_on_return, METH_FASTCALL, "PY_RETURN / PY_YIELD callback."},
    {"on_unwind", (PyCFunction)(void (*)(void))group_on_unwind, METH_FASTCALL, "PY_UNWIND callback."},
    {"on_handled", (PyCFunction)(void (*)(void))group_on_handled, METH_FASTCALL, "EXCEPTION_HANDLED callback."},
    {"on_call", (PyCFunction)(void (*)(void))group_on_call, METH_FASTCALL, "CALL callback."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot group_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, group_init},
    {Py_tp_dealloc, group_dealloc},
    {Py_tp_methods, group_methods},
    {Py_tp_doc, "Every thread recorded in full, one Tracer per thread (see the comment above Group in _ctracer.c)."},
    {0, NULL},
};

static PyType_Spec group_spec = {
    .name = "neural_dap.trace._ctracer.Threads",
    .basicsize = sizeof(Group),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = group_slots,
};

/* -- the floor: callbacks that do nothing (benchmarks/recording.py) --------------------------------
 * What per-event callbacks cost by themselves, measured beside the recorder: the physical limit of
 * recording by callbacks. */
static PyObject *FLOOR_DISABLE; /* sys.monitoring.DISABLE, for the floor's forward jumps */

static PyObject *floor_noop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { Py_RETURN_NONE; }

static PyObject *floor_jump(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* as the recorder does: a forward jump is never a line event, so it is DISABLEd where it is */
    if (nargs >= 3 && FLOOR_DISABLE != NULL) {
        long offset = PyLong_AsLong(args[1]), target = PyLong_AsLong(args[2]);
        if (PyErr_Occurred())
            return NULL;
        if (target > offset) {
            Py_INCREF(FLOOR_DISABLE);
            return FLOOR_DISABLE;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *floor_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* as the recorder does (mon_call): a site calling a Python function (or a method bound to one)
     * goes on calling back, any other site is DISABLEd where it is */
    if (nargs >= 3 && FLOOR_DISABLE != NULL) {
        PyObject *callable = args[2];
        if ((PyObject *)Py_TYPE(callable) == METHOD_TYPE)
            callable = PyMethod_Function(callable);
        if (callable == NULL || (PyObject *)Py_TYPE(callable) != FUNCTION_TYPE) {
            Py_INCREF(FLOOR_DISABLE);
            return FLOOR_DISABLE;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *floor_set_disable(PyObject *self, PyObject *value) {
    Py_INCREF(value);
    SET_REF(FLOOR_DISABLE, value);
    Py_RETURN_NONE;
}

static int floor_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) { return 0; }

static PyObject *floor_settrace(PyObject *self, PyObject *on) {
    PyEval_SetTrace(PyObject_IsTrue(on) ? floor_trace : NULL, NULL);
    Py_RETURN_NONE;
}

/* -- a dict's version (PEP 509) ------------------------------------------------------------------
 * CPython 3.11 to 3.13 change a dict's ma_version_tag at every change of its contents (3.12 and
 * 3.13 keep watcher bits in its low bits: watching a dict changes it too, which only costs a diff).
 * A thread's every line diffs the module globals another thread's stack shows (SharedGlobals in
 * child/engines.py): an unchanged version means no name was bound, rebound or deleted, so a
 * module whose globals hold no mutable value needs no diff at all. Not in the limited API: read
 * through the layout those releases share (the object header, ma_used, ma_version_tag); the
 * Python side asks only on them (3.14 dropped the tag). */
typedef struct {
    PyObject ob_base;
    Py_ssize_t ma_used;
    unsigned long long ma_version_tag;
} DictHead;

static unsigned long long version_of(PyObject *dict) { return ((DictHead *)dict)->ma_version_tag; }

static PyObject *dict_version(PyObject *self, PyObject *d) {
    if (!PyDict_CheckExact(d)) {
        PyErr_SetString(PyExc_TypeError, "dict_version: a dict");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(version_of(d));
}

/* -- a wrapper of the recorder's dressed as the C function it wraps ------------------------------
 *
 * The recording process wraps a few functions of `os`, `threading` and `subprocess` (os._exit flushes
 * the recording first, os.fork counts the processes started, ...). A user who opens `os` among a
 * module's variables would see `<function _limit_processes.<locals>.counted.<locals>.start>` where
 * debugpy shows `<built-in function fork>`: a C function object named as the original, whose
 * `__self__` is a module (as a module's own functions have), calls the wrapper instead. Its name,
 * module, signature and docstring are the original's; its method table lives as long as the process
 * (a few are made, once). */
static PyObject *WRAPPER_NAME; /* "__neural_dap_wrapper__": where the holder module keeps the wrapper */

static PyObject *dressed_call(PyObject *holder, PyObject *args, PyObject *kwargs) {
    PyObject *wrapper = PyObject_GetAttr(holder, WRAPPER_NAME);
    if (wrapper == NULL)
        return NULL;
    PyObject *result = PyObject_Call(wrapper, args, kwargs);
    Py_DECREF(wrapper);
    return result;
}

static char *copy_text(const char *text) {
    size_t n = strlen(text) + 1;
    char *out = malloc(n);
    if (out != NULL)
        memcpy(out, text, n);
    return out;
}

static PyObject *dressed_as(PyObject *self, PyObject *args) {
    PyObject *wrapper, *module_name;
    const char *name, *doc;
    if (!PyArg_ParseTuple(args, "OsUz", &wrapper, &name, &module_name, &doc))
        return NULL;
    PyMethodDef *def = calloc(1, sizeof(PyMethodDef));
    char *kept_name = copy_text(name);
    char *kept_doc = doc != NULL ? copy_text(doc) : NULL;
    if (def == NULL || kept_name == NULL || (doc != NULL && kept_doc == NULL)) {
        free(def);
        free(kept_name);
        free(kept_doc);
        return PyErr_NoMemory();
    }
    def->ml_name = kept_name;
    def->ml_meth = (PyCFunction)(void (*)(void))dressed_call;
    def->ml_flags = METH_VARARGS | METH_KEYWORDS;
    def->ml_doc = kept_doc;
    PyObject *holder = PyModule_NewObject(module_name);
    if (holder == NULL)
        return NULL; /* (the table stays: a few bytes, once) */
    PyObject *function = NULL;
    if (PyObject_SetAttr(holder, WRAPPER_NAME, wrapper) == 0)
        function = PyCFunction_NewEx(def, holder, module_name);
    Py_DECREF(holder);
    return function;
}

static PyMethodDef module_methods[] = {
    {"dressed_as", dressed_as, METH_VARARGS,
     "dressed_as(wrapper, name, module, doc): a C function named `name` (of `module`, documented by `doc`, "
     "signature line first) that calls `wrapper`."},
    {"floor_noop", (PyCFunction)(void (*)(void))floor_noop, METH_FASTCALL, "A sys.monitoring callback that does nothing."},
    {"floor_jump", (PyCFunction)(void (*)(void))floor_jump, METH_FASTCALL, "DISABLE a forward jump, as the recorder does."},
    {"floor_call", (PyCFunction)(void (*)(void))floor_call, METH_FASTCALL, "DISABLE a call site of no Python function, as the recorder does."},
    {"floor_set_disable", floor_set_disable, METH_O, "floor_set_disable(sys.monitoring.DISABLE)"},
    {"floor_settrace", floor_settrace, METH_O, "floor_settrace(on): a C trace function that does nothing (3.11)."},
    {"dict_version", dict_version, METH_O, "dict_version(d): the dict's version tag (CPython 3.11 to 3.13 only)."},
    {"no_shortcuts", no_shortcuts, METH_NOARGS, "no_shortcuts(): the line shortcuts end (the program traces itself)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ctracer", "The recording tracer in C.", -1, module_methods};

PyMODINIT_FUNC PyInit__ctracer(void) {
    journal_enter = (int (*)(int))dlsym(RTLD_DEFAULT, "nd_journal_enter");
    journal_leave = (void (*)(int))dlsym(RTLD_DEFAULT, "nd_journal_leave");
    journal_set_counter = (void (*)(const long long *))dlsym(RTLD_DEFAULT, "nd_journal_set_counter");
    journal_set_takes = (void (*)(const long long *, const volatile int *))dlsym(RTLD_DEFAULT, "nd_journal_set_takes");
    journal_trace_line = (void (*)(const char *))dlsym(RTLD_DEFAULT, "nd_journal_trace_line");

    TAG_C = PyUnicode_InternFromString("c");
    TAG_L = PyUnicode_InternFromString("l");
    TAG_R = PyUnicode_InternFromString("r");
    TAG_X = PyUnicode_InternFromString("x");
    TAG_U = PyUnicode_InternFromString("u");
    TAG_S = PyUnicode_InternFromString("s");
    CO_NAME = PyUnicode_InternFromString("co_name");
    F_LOCALS = PyUnicode_InternFromString("f_locals");
    WRAPPER_NAME = PyUnicode_InternFromString("__neural_dap_wrapper__");
    PyObject *types = PyImport_ImportModule("types");
    if (types == NULL)
        return NULL;
    FUNCTION_TYPE = PyObject_GetAttrString(types, "FunctionType");
    METHOD_TYPE = PyObject_GetAttrString(types, "MethodType");
    Py_DECREF(types);
    if (FUNCTION_TYPE == NULL || METHOD_TYPE == NULL)
        return NULL;
    if (pthread_key_create(&gone_key, thread_gone) != 0) {
        PyErr_SetString(PyExc_OSError, "no thread-specific key left");
        return NULL;
    }
    PyObject *type = PyType_FromSpec(&tracer_spec);
    if (type == NULL)
        return NULL;
    PyObject *group = PyType_FromSpec(&group_spec);
    if (group == NULL) {
        Py_DECREF(type);
        return NULL;
    }
    TRACER_TYPE = type;
    Py_INCREF(type); /* (kept for type checks) */
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || PyModule_AddObject(m, "Tracer", type) < 0) {
        Py_DECREF(type);
        Py_DECREF(group);
        Py_XDECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "Threads", group) < 0) {
        Py_DECREF(group);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
