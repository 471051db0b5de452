/* The recording tracer in C, for CPython 3.11 (PyEval_SetTrace). The pure-Python engines in
 * child.py define the behaviour; this does the same per event without running Python code for the
 * common cases (an unchanged or changed int / str / float / bool / None local). Values that need a
 * repr or a structure are handed to the recorder's own Python functions, so both engines encode
 * values identically.
 *
 * Full capture: events appended to the recorder's list are the tuples child.py documents:
 *   ("c", inv, code_id, line, depth, changes)  ("l", inv, line, changes, caught)
 *   ("r", inv, line, value)  ("x", inv, line, value)  ("u", inv, changes)
 *
 * Skeleton mode records only what the debugger actions need, in fixed-size binary records (see
 * child.py: 12 bytes an event, 8 more a call), and no locals at all; every `hook_every` events (or
 * at `hook_at`) it calls the recorder's hook, which takes checkpoints and enforces limits. Inside
 * a capture window [capture_from, capture_to] (a materialisation replaying from a checkpoint) it
 * also does the full capture, starting with a snapshot ("s", inv, code_id, line, depth, changes)
 * of every frame already on the stack.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

typedef struct {
    PyFrameObject *frame; /* borrowed: the frame is alive while it is on our stack */
    long long inv;
    PyObject *objs;       /* name -> object last seen (NULL in skeleton mode until captured) */
    PyObject *encs;       /* name -> encoding, for objects that can change in place */
    PyObject *pending;    /* an exception raised in this frame and not yet handled */
    int module_scope;
    long long last;       /* index of this invocation's latest event */
    long code_id;
} Entry;

/* skeleton records, little-endian, packed */
#pragma pack(push, 1)
typedef struct {
    unsigned int inv;
    int line;
    unsigned char kind; /* 0 call, 1 line, 2 return, 3 exception; | 0x80 a line just after a handled exception */
    unsigned char pad[3];
} EventRecord;
typedef struct {
    unsigned int code_id;
    int caller_last; /* the caller's latest event before this call (-1: none) */
} CallRecord;
#pragma pack(pop)

typedef struct {
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
    Entry *stack;
    Py_ssize_t depth;
    Py_ssize_t capacity;
    long long next_inv;
    int active;
    /* skeleton mode */
    int skeleton;
    long long count;          /* events so far */
    long long hook_at;        /* call the hook when count reaches this */
    long long hook_every;     /* ... and every this many events */
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
} Tracer;

static PyObject *TAG_C, *TAG_L, *TAG_R, *TAG_X, *TAG_U, *TAG_S, *EMPTY_TUPLE;
static const long long SMALL_INT = 1LL << 53;

static int is_atom(PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || t == &PyBool_Type ||
           v == Py_None || t == &PyBytes_Type || t == &PyComplex_Type;
}

static int hidden_global(PyObject *name, PyObject *value) {
    if (PyUnicode_GetLength(name) >= 2 && PyUnicode_READ_CHAR(name, 0) == '_' && PyUnicode_READ_CHAR(name, 1) == '_')
        return 1;
    return PyModule_Check(value) || PyFunction_Check(value) || PyType_Check(value) || PyCFunction_Check(value);
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
        return PyObject_CallOneArg(t->encode_atom, value);
    }
    return PyObject_CallOneArg(t->encode_object, value);
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
        if (atom) {
            if (e->module_scope && PyUnicode_GetLength(name) >= 2 && PyUnicode_READ_CHAR(name, 0) == '_' && PyUnicode_READ_CHAR(name, 1) == '_')
                continue;
            seen++;
            if (PyDict_GetItemWithError(e->objs, name) == value)
                continue;
            if (PyErr_Occurred())
                goto error;
            enc = encode(t, value, 1);
            if (enc == NULL)
                goto error;
            if (PyDict_SetItem(e->objs, name, value) < 0) {
                Py_DECREF(enc);
                goto error;
            }
            if (PyDict_Contains(e->encs, name) == 1 && PyDict_DelItem(e->encs, name) < 0) {
                Py_DECREF(enc);
                goto error;
            }
        } else {
            if (PyUnicode_GetLength(name) > 0 && PyUnicode_READ_CHAR(name, 0) == '.')
                continue;
            if (e->module_scope && hidden_global(name, value))
                continue;
            seen++;
            enc = encode(t, value, 0);
            if (enc == NULL)
                goto error;
            if (PyDict_SetItem(e->objs, name, value) < 0) {
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
        if (changes == NULL && (changes = PyList_New(0)) == NULL) {
            Py_DECREF(enc);
            goto error;
        }
        int bad = PyList_Append(changes, name) < 0 || PyList_Append(changes, enc) < 0;
        Py_DECREF(enc);
        if (bad)
            goto error;
    }
    if (e->module_scope || PyDict_GET_SIZE(e->objs) > seen) {
        PyObject *keys = PyDict_Keys(e->objs);
        if (keys == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            int has = PyDict_Contains(locals, key);
            if (has < 0) {
                Py_DECREF(keys);
                goto error;
            }
            if (has)
                continue;
            if (PyDict_DelItem(e->objs, key) < 0 || (PyDict_Contains(e->encs, key) == 1 && PyDict_DelItem(e->encs, key) < 0)) {
                Py_DECREF(keys);
                goto error;
            }
            PyObject *gone = PyList_New(0);
            if (changes == NULL)
                changes = PyList_New(0);
            if (gone == NULL || changes == NULL || PyList_Append(changes, key) < 0 || PyList_Append(changes, gone) < 0) {
                Py_XDECREF(gone);
                Py_DECREF(keys);
                goto error;
            }
            Py_DECREF(gone);
        }
        Py_DECREF(keys);
    }
    if (changes == NULL)
        Py_RETURN_NONE;
    return changes;
error:
    Py_XDECREF(changes);
    return NULL;
}

static PyObject *frame_diff(Tracer *t, Entry *e) {
    PyObject *locals = PyFrame_GetLocals(e->frame);
    if (locals == NULL)
        return NULL;
    PyObject *changes = PyDict_Check(locals) ? diff(t, e, locals) : (Py_INCREF(Py_None), Py_None);
    Py_DECREF(locals);
    return changes;
}

static int emit(Tracer *t, PyObject *tuple) {
    if (tuple == NULL)
        return -1;
    int rc = PyList_Append(t->events, tuple);
    Py_DECREF(tuple);
    return rc;
}

/* -- skeleton records ------------------------------------------------------------------------------- */

static int flush_records(Tracer *t) {
    if (t->ev_len == 0 && t->calls_len == 0)
        return 0;
    PyObject *events = PyBytes_FromStringAndSize((const char *)t->ev, t->ev_len * (Py_ssize_t)sizeof(EventRecord));
    PyObject *calls = PyBytes_FromStringAndSize((const char *)t->calls, t->calls_len * (Py_ssize_t)sizeof(CallRecord));
    PyObject *first = PyLong_FromLongLong(t->ev_first);
    t->ev_first += t->ev_len;
    t->ev_len = 0;
    t->calls_len = 0;
    if (events == NULL || calls == NULL || first == NULL) {
        Py_XDECREF(events);
        Py_XDECREF(calls);
        Py_XDECREF(first);
        return -1;
    }
    PyObject *rc = PyObject_CallFunctionObjArgs(t->flush, events, calls, first, NULL);
    Py_DECREF(events);
    Py_DECREF(calls);
    Py_DECREF(first);
    if (rc == NULL)
        return -1;
    Py_DECREF(rc);
    return 0;
}

static int record_event(Tracer *t, long long inv, int line, unsigned char kind) {
    if (t->ev_len == t->ev_cap && flush_records(t) < 0)
        return -1;
    EventRecord *r = &t->ev[t->ev_len++];
    r->inv = (unsigned int)inv;
    r->line = line;
    r->kind = kind;
    r->pad[0] = r->pad[1] = r->pad[2] = 0;
    return 0;
}

static int record_call(Tracer *t, long code_id, long long caller_last) {
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
    return 0;
}

/* Count one event; call the hook when due (it takes checkpoints, enforces limits, may not return). */
static int counted(Tracer *t) {
    long long n = ++t->count;
    if (n >= t->hook_at || (t->hook_every > 0 && n % t->hook_every == 0)) {
        PyObject *arg = PyLong_FromLongLong(n);
        if (arg == NULL)
            return -1;
        PyObject *next = PyObject_CallOneArg(t->hook, arg);
        Py_DECREF(arg);
        if (next == NULL)
            return -1;
        long long at = PyLong_AsLongLong(next);
        Py_DECREF(next);
        if (at == -1 && PyErr_Occurred())
            return -1;
        t->hook_at = at;
    }
    return 0;
}

static int capturing(Tracer *t) {
    /* the event about to be counted is number t->count (0-based) */
    return t->skeleton && t->count >= t->capture_from && t->count <= t->capture_to;
}

static int ensure_dicts(Entry *e) {
    if (e->objs != NULL)
        return 0;
    e->objs = PyDict_New();
    e->encs = PyDict_New();
    if (e->objs == NULL || e->encs == NULL) {
        Py_CLEAR(e->objs);
        Py_CLEAR(e->encs);
        return -1;
    }
    return 0;
}

/* At the first captured event: every frame already on the stack, with all its locals. */
static int snapshot_stack(Tracer *t, Py_ssize_t upto) {
    if (t->snapshotted)
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
        if (emit(t, Py_BuildValue("(OLliNN)", TAG_S, e->inv, e->code_id, PyFrame_GetLineNumber(e->frame), PyLong_FromSsize_t(d), changes)) < 0)
            return -1;
    }
    return 0;
}

/* -- events -------------------------------------------------------------------------------------- */

static int on_call(Tracer *t, PyFrameObject *frame) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *user = PyDict_GetItemWithError(t->user_cache, (PyObject *)code);
    if (user == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(code);
            return -1;
        }
        user = PyObject_CallOneArg(t->judge, (PyObject *)code);
        if (user == NULL || PyDict_SetItem(t->user_cache, (PyObject *)code, user) < 0) {
            Py_XDECREF(user);
            Py_DECREF(code);
            return -1;
        }
        Py_DECREF(user); /* the cache keeps it */
    }
    if (user != Py_True) {
        Py_DECREF(code);
        /* no line events for code that is not the user's */
        return PyObject_SetAttrString((PyObject *)frame, "f_trace_lines", Py_False);
    }
    PyObject *cid = PyDict_GetItemWithError(t->code_ids, (PyObject *)code);
    if (cid == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(code);
            return -1;
        }
        cid = PyObject_CallOneArg(t->code_id, (PyObject *)code);
        if (cid == NULL) {
            Py_DECREF(code);
            return -1;
        }
    } else {
        Py_INCREF(cid);
    }
    int module_scope = PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
    Py_DECREF(code);
    if (t->depth == t->capacity) {
        Py_ssize_t capacity = t->capacity ? t->capacity * 2 : 64;
        Entry *grown = PyMem_Realloc(t->stack, capacity * sizeof(Entry));
        if (grown == NULL) {
            Py_DECREF(cid);
            PyErr_NoMemory();
            return -1;
        }
        t->stack = grown;
        t->capacity = capacity;
    }
    long long index = t->count;
    Entry *e = &t->stack[t->depth];
    e->frame = frame;
    e->inv = t->next_inv++;
    e->objs = NULL;
    e->encs = NULL;
    e->pending = NULL;
    e->module_scope = module_scope;
    e->code_id = PyLong_AsLong(cid);
    e->last = index;
    Py_ssize_t depth = t->depth++;
    if (t->skeleton) {
        long long caller_last = depth > 0 ? t->stack[depth - 1].last : -1;
        int capture = capturing(t);
        if (record_event(t, e->inv, PyFrame_GetLineNumber(frame), 0) < 0 || record_call(t, e->code_id, caller_last) < 0 || counted(t) < 0) {
            Py_DECREF(cid);
            return -1;
        }
        if (!capture) {
            Py_DECREF(cid);
            return 0;
        }
        if (snapshot_stack(t, depth) < 0) {
            Py_DECREF(cid);
            return -1;
        }
    }
    if (ensure_dicts(e) < 0) {
        Py_DECREF(cid);
        return -1;
    }
    PyObject *changes = frame_diff(t, e);
    if (changes == NULL) {
        Py_DECREF(cid);
        return -1;
    }
    return emit(t, Py_BuildValue("(OLNiNN)", TAG_C, e->inv, cid, PyFrame_GetLineNumber(frame), PyLong_FromSsize_t(depth), changes));
}

static void pop(Tracer *t) {
    Entry *e = &t->stack[--t->depth];
    Py_CLEAR(e->objs);
    Py_CLEAR(e->encs);
    Py_CLEAR(e->pending);
}

static int trace(PyObject *self, PyFrameObject *frame, int what, PyObject *arg) {
    Tracer *t = (Tracer *)self;
    if (!t->active)
        return 0;
    if (what == PyTrace_CALL)
        return on_call(t, frame);
    if (t->depth == 0 || t->stack[t->depth - 1].frame != frame)
        return 0; /* not a frame we trace (or another thread) */
    Entry *e = &t->stack[t->depth - 1];
    int line = PyFrame_GetLineNumber(frame);
    if (what == PyTrace_EXCEPTION) {
        PyObject *value = PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) >= 2 ? PyTuple_GET_ITEM(arg, 1) : Py_None;
        Py_INCREF(value);
        Py_XSETREF(e->pending, value);
        return 0;
    }
    int capture = 1;
    if (t->skeleton && (what == PyTrace_LINE || what == PyTrace_RETURN)) {
        long long index = t->count;
        capture = capturing(t);
        unsigned char kind;
        if (what == PyTrace_LINE)
            kind = e->pending != NULL ? 0x81 : 1;
        else
            kind = (e->pending != NULL && (arg == NULL || arg == Py_None)) ? 3 : 2;
        if (record_event(t, e->inv, line, kind) < 0)
            return -1;
        e->last = index;
        if (capture && (snapshot_stack(t, t->depth) < 0 || ensure_dicts(e) < 0))
            return -1;
        if (!capture) {
            if (what == PyTrace_LINE)
                Py_CLEAR(e->pending);
            else
                pop(t);
            return counted(t);
        }
        /* captured: the full event below, then count it */
    }
    if (what == PyTrace_LINE) {
        PyObject *changes = frame_diff(t, e);
        if (changes == NULL)
            return -1;
        PyObject *caught = Py_None;
        Py_INCREF(caught);
        if (e->pending != NULL) {
            Py_DECREF(caught);
            caught = PyObject_CallOneArg(t->bounded, e->pending);
            Py_CLEAR(e->pending);
            if (caught == NULL) {
                Py_DECREF(changes);
                return -1;
            }
        }
        if (emit(t, Py_BuildValue("(OLiNN)", TAG_L, e->inv, line, changes, caught)) < 0)
            return -1;
        return t->skeleton ? counted(t) : 0;
    }
    if (what == PyTrace_RETURN) {
        int rc;
        if (e->pending != NULL && (arg == NULL || arg == Py_None)) {
            PyObject *text = PyObject_CallOneArg(t->bounded, e->pending);
            rc = text == NULL ? -1 : emit(t, Py_BuildValue("(OLiN)", TAG_X, e->inv, line, text));
        } else {
            PyObject *enc = PyObject_CallOneArg(t->value_repr, arg == NULL ? Py_None : arg);
            rc = enc == NULL ? -1 : emit(t, Py_BuildValue("(OLiN)", TAG_R, e->inv, line, enc));
        }
        pop(t);
        if (rc < 0)
            return -1;
        if (t->depth > 0 && t->stack[t->depth - 1].objs != NULL) {
            /* what the callee changed in its caller's objects shows in the caller right away */
            Entry *caller = &t->stack[t->depth - 1];
            PyObject *changes = frame_diff(t, caller);
            if (changes == NULL)
                return -1;
            if (changes == Py_None)
                Py_DECREF(changes);
            else if (emit(t, Py_BuildValue("(OLN)", TAG_U, caller->inv, changes)) < 0)
                return -1;
        }
        return t->skeleton ? counted(t) : 0;
    }
    return 0;
}

static PyObject *tracer_start(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    ((Tracer *)self)->active = 1;
    PyEval_SetTrace(trace, self);
    Py_RETURN_NONE;
}

static PyObject *tracer_stop(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    ((Tracer *)self)->active = 0;
    PyEval_SetTrace(NULL, NULL);
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
    Py_XSETREF(t->hook, hook);
    Py_XSETREF(t->flush, flush);
    t->hook_every = hook_every;
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

static int tracer_init(Tracer *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"events", "user_cache", "judge", "code_ids", "code_id", "encode_atom", "encode_object", "value_repr", "bounded", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OO!OOOOO", names, &PyList_Type, &self->events, &PyDict_Type, &self->user_cache,
                                     &self->judge, &PyDict_Type, &self->code_ids, &self->code_id, &self->encode_atom, &self->encode_object,
                                     &self->value_repr, &self->bounded))
        return -1;
    Py_INCREF(self->events);
    Py_INCREF(self->user_cache);
    Py_INCREF(self->judge);
    Py_INCREF(self->code_ids);
    Py_INCREF(self->code_id);
    Py_INCREF(self->encode_atom);
    Py_INCREF(self->encode_object);
    Py_INCREF(self->value_repr);
    Py_INCREF(self->bounded);
    return 0;
}

static void tracer_dealloc(Tracer *self) {
    while (self->depth > 0)
        pop(self);
    PyMem_Free(self->stack);
    Py_XDECREF(self->events);
    Py_XDECREF(self->user_cache);
    Py_XDECREF(self->judge);
    Py_XDECREF(self->code_ids);
    Py_XDECREF(self->code_id);
    Py_XDECREF(self->encode_atom);
    Py_XDECREF(self->encode_object);
    Py_XDECREF(self->value_repr);
    Py_XDECREF(self->bounded);
    Py_XDECREF(self->hook);
    Py_XDECREF(self->flush);
    PyMem_Free(self->ev);
    PyMem_Free(self->calls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef tracer_methods[] = {
    {"start", tracer_start, METH_NOARGS, "Trace this thread from now on."},
    {"stop", tracer_stop, METH_NOARGS, "Stop tracing."},
    {"skeleton", (PyCFunction)(void (*)(void))tracer_skeleton, METH_VARARGS | METH_KEYWORDS,
     "skeleton(hook, flush, hook_every, hook_at): record only the skeleton from now on."},
    {"capture", tracer_capture, METH_VARARGS, "capture(first, last): full capture for events first..last."},
    {"flush", tracer_flush, METH_NOARGS, "Hand the buffered skeleton records to the flush callable."},
    {"count", tracer_count, METH_NOARGS, "Events so far."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neural_dap.trace._ctracer.Tracer",
    .tp_basicsize = sizeof(Tracer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)tracer_init,
    .tp_dealloc = (destructor)tracer_dealloc,
    .tp_methods = tracer_methods,
    .tp_doc = "The recording tracer (see child.py for what it records).",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ctracer", "The recording tracer in C.", -1, NULL};

PyMODINIT_FUNC PyInit__ctracer(void) {
    if (PyType_Ready(&TracerType) < 0)
        return NULL;
    TAG_C = PyUnicode_InternFromString("c");
    TAG_L = PyUnicode_InternFromString("l");
    TAG_R = PyUnicode_InternFromString("r");
    TAG_X = PyUnicode_InternFromString("x");
    TAG_U = PyUnicode_InternFromString("u");
    TAG_S = PyUnicode_InternFromString("s");
    EMPTY_TUPLE = PyTuple_New(0);
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TracerType);
    if (PyModule_AddObject(m, "Tracer", (PyObject *)&TracerType) < 0) {
        Py_DECREF(&TracerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
