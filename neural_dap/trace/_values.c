/* The structure of a value as the recording child encodes it, in C: child/values.py's
 * Reprs.structure, which defines it, done without a Python frame per attribute.
 *
 * Why: a full capture encodes every object local at every line (an object can change in place
 * between two lines without a name being rebound), so a request handler's `self` is walked about
 * ten times a request, and that walk was most of what a server under the recorder paid. The walk
 * itself (attributes, names, memo, the atoms' reprs) is the interpreter's overhead, not work.
 *
 * The rule: the text of every value is the one Reprs.repr gives. The reprs that cannot run the
 * program's code, raise, hang or be slow are made here: exact str / small int / float / bool /
 * None; a short list, tuple or dict of those (and of short bytes); a class of the plain metaclass;
 * and an object whose type keeps object.__repr__ (its text is its type's name; the address is
 * removed as values.py's _ADDRESS removes it). Every other value's
 * text is asked of Reprs.repr itself, with its deadline, memo of slow reprs and fallbacks.
 * tests/test_value_structure.py holds this to the Python definition, value by value.
 *
 * Between walks (a Reprs passes its two dicts): a socket's text is kept while the kernel says the
 * same of it, and an object's structure while its names and atoms are the same; every other text
 * is made again at each walk, since anything may change in place. The same test walks objects
 * again and again, each changed in place between two walks.
 *
 * Built against the limited API of 3.11, like the tracer: one build for every interpreter that
 * runs the recording child.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

static PyObject *MARK;          /* values.py's _MARK: a cut text ends with it */
static PyObject *AT_0X;         /* where an address starts */
static PyObject *EMPTY;         /* "" */
static PyObject *DICT_NAME;     /* "__dict__" */
static PyObject *NAME_NAME;     /* "__name__" */
static PyObject *ITEMS_NAME;    /* "items" */
static PyObject *ISSPACE_NAME;  /* "isspace" */
static PyObject *FUNCTION_TYPE; /* types.FunctionType (not in the limited API) */
static reprfunc OBJECT_REPR;    /* object.__repr__'s slot */
static PyObject *SOCKET_TYPE;   /* socket.socket */
static PyObject *SOCKET_REPR;   /* socket.socket.__repr__ as the standard library defines it */
static PyObject *REPR_NAME;     /* "__repr__" */
static PyObject *CLOSED_NAME;   /* "_closed" */
static PyObject *FILENO_NAME;   /* "fileno" */
static PyObject *NOT_KEPT;      /* a node's mark for a child that is not an atom it keeps */
static const long long SMALL_INT = 1LL << 53;

/* What one walk needs of its Reprs. */
typedef struct {
    PyObject *repr;       /* Reprs.repr, bound */
    PyObject *slot_names; /* values.py's _slot_names: type -> tuple of slot names */
    PyObject *seen;       /* id -> (object, text): each object repr'd once in a walk */
    PyObject *sockets;    /* id -> (weak reference, key, text): a socket's text while its key holds */
    PyObject *nodes;      /* id + depth -> Node: an object's structure from its last walk */
    Py_ssize_t limit;
    Py_ssize_t max_children;
} Walk;

static int is_atom(PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || t == &PyBool_Type ||
           v == Py_None || t == &PyBytes_Type || t == &PyComplex_Type;
}

static int is_literal_container(PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyList_Type || t == &PyTuple_Type || t == &PyDict_Type || t == &PySet_Type ||
           t == &PyFrozenSet_Type;
}

static int small_int(PyObject *v) {
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return !overflow && n > -SMALL_INT && n < SMALL_INT;
}

/* `text` cut at the walk's limit, marked (Reprs._bounded); steals `text`. */
static PyObject *bounded(Walk *w, PyObject *text) {
    if (text == NULL || PyUnicode_GetLength(text) <= w->limit)
        return text;
    PyObject *head = PyUnicode_Substring(text, 0, w->limit);
    Py_DECREF(text);
    if (head == NULL)
        return NULL;
    PyObject *cut = PyUnicode_Concat(head, MARK);
    Py_DECREF(head);
    return cut;
}

static int is_hex(Py_UCS4 c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* `\s` of a str pattern (re's Unicode whitespace); -1 on error. */
static int is_space(Py_UCS4 c) {
    if (c < 128)
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
    PyObject *one = PyUnicode_FromOrdinal((int)c);
    if (one == NULL)
        return -1;
    PyObject *answer = PyObject_CallMethodObjArgs(one, ISSPACE_NAME, NULL);
    Py_DECREF(one);
    if (answer == NULL)
        return -1;
    int yes = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return yes;
}

/* The end of an address that starts at `at` (" at 0x" and its hex digits, followed by one of
 * `>,:;])` or a space: values.py's _ADDRESS), or 0 where none does; -1 on error. */
static Py_ssize_t address_end(PyObject *text, Py_ssize_t at, Py_ssize_t n) {
    Py_ssize_t end = at + 6;
    while (end < n && is_hex(PyUnicode_ReadChar(text, end)))
        end++;
    if (end == at + 6 || end >= n)
        return 0;
    Py_UCS4 next = PyUnicode_ReadChar(text, end);
    if (next == '>' || next == ',' || next == ':' || next == ';' || next == ']' || next == ')')
        return end;
    int space = is_space(next);
    return space < 0 ? -1 : space ? end : 0;
}

/* values.py's without_addresses; steals `text`. */
static PyObject *without_addresses(PyObject *text) {
    if (text == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GetLength(text);
    Py_ssize_t at = PyUnicode_Find(text, AT_0X, 0, n, 1);
    if (at == -1)
        return text;
    PyObject *pieces = at < -1 ? NULL : PyList_New(0);
    Py_ssize_t kept_from = 0;
    while (pieces != NULL && at >= 0) {
        Py_ssize_t end = address_end(text, at, n);
        if (end < 0)
            goto error;
        if (end > 0) {
            PyObject *piece = PyUnicode_Substring(text, kept_from, at);
            if (piece == NULL || PyList_Append(pieces, piece) < 0) {
                Py_XDECREF(piece);
                goto error;
            }
            Py_DECREF(piece);
            kept_from = end;
        }
        at = PyUnicode_Find(text, AT_0X, end > 0 ? end : at + 1, n, 1);
        if (at < -1)
            goto error;
    }
    if (pieces == NULL)
        goto error;
    PyObject *rest = PyUnicode_Substring(text, kept_from, n);
    if (rest == NULL || PyList_Append(pieces, rest) < 0) {
        Py_XDECREF(rest);
        goto error;
    }
    Py_DECREF(rest);
    Py_DECREF(text);
    PyObject *joined = PyUnicode_Join(EMPTY, pieces);
    Py_DECREF(pieces);
    return joined;
error:
    Py_XDECREF(pieces);
    Py_DECREF(text);
    return NULL;
}

/* The atoms whose Reprs.repr is the builtin repr, uncut or cut at the limit (its first branches). */
static int plain_atom(Walk *w, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return PyUnicode_GetLength(v) < w->limit;
    if (t == &PyLong_Type)
        return small_int(v);
    return t == &PyFloat_Type || t == &PyBool_Type || v == Py_None;
}

/* An item whose builtin repr runs none of the program's code and cannot raise (a big int's can:
 * past 4300 digits), nor be long: a plain atom, a short bytes, or a tuple of such. */
static int plain_item(Walk *w, PyObject *v, int nesting) {
    if (plain_atom(w, v))
        return 1;
    if (Py_TYPE(v) == &PyBytes_Type)
        return PyBytes_Size(v) < w->limit;
    if (Py_TYPE(v) != &PyTuple_Type || nesting <= 0)
        return 0;
    Py_ssize_t n = PyTuple_Size(v);
    if (n > w->max_children * 4)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!plain_item(w, PyTuple_GetItem(v, i), nesting - 1))
            return 0;
    return 1;
}

/* A literal container of plain items, short enough that Reprs.repr takes its builtin repr whole
 * (a longer one it cuts item by item). */
static int plain_container(Walk *w, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyTuple_Type)
        return plain_item(w, v, 2);
    if (t != &PyList_Type && t != &PyDict_Type)
        return 0;
    Py_ssize_t n = t == &PyList_Type ? PyList_Size(v) : PyDict_Size(v);
    if (n > w->max_children * 4)
        return 0;
    if (t == &PyList_Type) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (!plain_item(w, PyList_GetItem(v, i), 1))
                return 0;
        return 1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(v, &pos, &key, &value))
        if (!plain_item(w, key, 1) || !plain_item(w, value, 1))
            return 0;
    return 1;
}

/* A class of the plain metaclass: `<class 'mod.Name'>`, from the type's own dict. */
static int plain_class(PyObject *v) { return Py_TYPE(v) == &PyType_Type; }

/* -- a socket's text, kept while what it is made of holds ------------------------------------
 * A server's request handler holds its connection (as `request`, `connection` and under `wfile`)
 * and its server the listening socket; every line of the handler walks them, and socket.__repr__
 * is Python code that formats three enums and asks the kernel for both addresses (a failed
 * getpeername raising OSError on a listening socket): a third of a request's recording. Its text
 * is a function of the object's class, `_closed`, its descriptor, family, type and protocol (fixed
 * for the object) and what getsockname and getpeername answer; the last two are asked here of the
 * kernel directly, their raw bytes in the key, so an equal key means an equal text. Only an exact
 * socket.socket whose class still has the standard library's __repr__ (a subclass or a patched repr
 * may read anything). */

/* The key of a socket's text (bytes), or NULL with no error where the fast path does not apply. */
static PyObject *socket_key(PyObject *v) {
    PyObject *closed = PyObject_GenericGetAttr(v, CLOSED_NAME);
    if (closed == NULL) {
        PyErr_Clear();
        return NULL;
    }
    int is_closed = PyObject_IsTrue(closed);
    Py_DECREF(closed);
    PyObject *fileno = is_closed < 0 ? NULL : PyObject_CallMethodObjArgs(v, FILENO_NAME, NULL);
    long fd = fileno == NULL ? -1 : PyLong_AsLong(fileno);
    Py_XDECREF(fileno);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    struct {
        long fd;
        int closed, own_rc, peer_rc;
        socklen_t own_len, peer_len;
        struct sockaddr_storage own, peer;
    } key;
    memset(&key, 0, sizeof(key));
    key.fd = fd;
    key.closed = is_closed;
    if (!is_closed) { /* (the repr asks for neither address of a closed socket) */
        key.own_len = key.peer_len = sizeof(struct sockaddr_storage);
        key.own_rc = getsockname((int)fd, (struct sockaddr *)&key.own, &key.own_len) == 0 ? 0 : errno;
        key.peer_rc = getpeername((int)fd, (struct sockaddr *)&key.peer, &key.peer_len) == 0 ? 0 : errno;
    }
    return PyBytes_FromStringAndSize((const char *)&key, sizeof(key));
}

/* Reprs.repr of an exact socket.socket from w->sockets, or made and kept there; NULL with no error
 * where the fast path does not apply. */
static PyObject *socket_text(Walk *w, PyObject *v) {
    PyObject *repr = PyObject_GetAttr(SOCKET_TYPE, REPR_NAME);
    int standard = repr == SOCKET_REPR;
    Py_XDECREF(repr);
    if (!standard) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *key = socket_key(v);
    PyObject *id = key == NULL ? NULL : PyLong_FromVoidPtr(v);
    if (id == NULL) {
        Py_XDECREF(key);
        return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(w->sockets, id); /* (borrowed) */
    if (found != NULL && PyWeakref_GetObject(PyTuple_GetItem(found, 0)) == v) {
        int same = PyObject_RichCompareBool(PyTuple_GetItem(found, 1), key, Py_EQ);
        if (same > 0) {
            PyObject *text = PyTuple_GetItem(found, 2);
            Py_INCREF(text);
            Py_DECREF(key);
            Py_DECREF(id);
            return text;
        }
    }
    PyObject *text = PyErr_Occurred() ? NULL : PyObject_CallFunctionObjArgs(w->repr, v, NULL);
    /* kept only where nothing changed while the repr ran (it lets the GIL go to other threads) */
    PyObject *after = text == NULL ? NULL : socket_key(v);
    if (after != NULL && PyObject_RichCompareBool(after, key, Py_EQ) > 0) {
        if (PyDict_Size(w->sockets) >= 4096)
            PyDict_Clear(w->sockets);
        PyObject *ref = PyWeakref_NewRef(v, NULL);
        PyObject *kept = ref == NULL ? NULL : PyTuple_Pack(3, ref, key, text);
        if (kept == NULL || PyDict_SetItem(w->sockets, id, kept) < 0)
            PyErr_Clear(); /* (not kept: the text is still right) */
        Py_XDECREF(ref);
        Py_XDECREF(kept);
    }
    Py_XDECREF(after);
    Py_DECREF(key);
    Py_DECREF(id);
    return text;
}

/* Reprs.repr(v): made here where no code of the program can run (see the top), else asked of it. */
static PyObject *repr_of(Walk *w, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if ((PyObject *)t == SOCKET_TYPE && w->sockets != NULL) {
        PyObject *text = socket_text(w, v);
        if (text != NULL || PyErr_Occurred())
            return text;
    }
    if (plain_atom(w, v)) {
        PyObject *text = PyObject_Repr(v);
        if (text == NULL || t == &PyUnicode_Type || PyUnicode_GetLength(text) <= w->limit)
            return t == &PyUnicode_Type ? bounded(w, text) : text;
        Py_DECREF(text); /* (a limit under 24 characters: Reprs.repr decides) */
    } else if (plain_container(w, v) || plain_class(v) ||
               (!is_atom(v) && PyType_GetSlot(t, Py_tp_repr) == (void *)OBJECT_REPR)) {
        return bounded(w, without_addresses(PyObject_Repr(v)));
    }
    return PyObject_CallFunctionObjArgs(w->repr, v, NULL);
}

/* Reprs._repr_once. */
static PyObject *repr_once(Walk *w, PyObject *v) {
    if (is_atom(v))
        return repr_of(w, v);
    PyObject *key = PyLong_FromVoidPtr(v);
    if (key == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(w->seen, key);
    if (found != NULL) {
        Py_DECREF(key);
        PyObject *text = PyTuple_GetItem(found, 1);
        Py_XINCREF(text);
        return text;
    }
    PyObject *text = PyErr_Occurred() ? NULL : repr_of(w, v);
    /* (the object is kept beside its text: its id cannot be reused while `seen` lives) */
    PyObject *kept = text == NULL ? NULL : PyTuple_Pack(2, v, text);
    int rc = kept == NULL ? -1 : PyDict_SetItem(w->seen, key, kept);
    Py_DECREF(key);
    Py_XDECREF(kept);
    if (rc < 0) {
        Py_XDECREF(text);
        return NULL;
    }
    return text;
}

/* Clear an exception the Python definition catches (`except Exception`); 0 if it did not. */
static int caught(void) {
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return 0;
    PyErr_Clear();
    return 1;
}

/* An exact dict's names and values, as two lists (no code of the program runs while it is read). */
static int dict_snapshot(PyObject *d, PyObject **names, PyObject **values) {
    Py_ssize_t n = PyDict_Size(d), pos = 0, i = 0;
    PyObject *key, *value;
    *names = PyList_New(n);
    *values = PyList_New(n);
    if (*names == NULL || *values == NULL)
        goto error;
    while (i < n && PyDict_Next(d, &pos, &key, &value)) {
        Py_INCREF(key);
        Py_INCREF(value);
        PyList_SetItem(*names, i, key);
        PyList_SetItem(*values, i, value);
        i++;
    }
    if (i == n)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
error:
    Py_CLEAR(*names);
    Py_CLEAR(*values);
    return -1;
}

/* What a dict subclass's own items() gives, as two lists. */
static int items_snapshot(PyObject *d, PyObject **names, PyObject **values) {
    PyObject *items = PyObject_CallMethodObjArgs(d, ITEMS_NAME, NULL);
    PyObject *seq = items == NULL ? NULL : PySequence_List(items);
    Py_XDECREF(items);
    if (seq == NULL)
        return -1;
    *names = PyList_New(0);
    *values = PyList_New(0);
    for (Py_ssize_t i = 0; *names != NULL && *values != NULL && i < PyList_Size(seq); i++) {
        PyObject *pair = PySequence_Tuple(PyList_GetItem(seq, i));
        if (pair == NULL || PyTuple_Size(pair) != 2) {
            if (pair != NULL)
                PyErr_SetString(PyExc_ValueError, "an item of __dict__ is not a pair");
            Py_XDECREF(pair);
            goto error;
        }
        int rc = PyList_Append(*names, PyTuple_GetItem(pair, 0)) < 0 ? -1 : PyList_Append(*values, PyTuple_GetItem(pair, 1));
        Py_DECREF(pair);
        if (rc < 0)
            goto error;
    }
    if (*names != NULL && *values != NULL) {
        Py_DECREF(seq);
        return 0;
    }
error: /* (a list not made, an item not a pair, an append failed) */
    Py_DECREF(seq);
    Py_CLEAR(*names);
    Py_CLEAR(*values);
    return -1;
}

/* values.py's _attributes: *names and *values get two lists (both NULL: none), *exact says they are
 * an exact __dict__'s; -1 on error. */
static int attributes(Walk *w, PyObject *v, PyObject **names, PyObject **values, int *exact) {
    *names = *values = NULL;
    *exact = 0;
    PyObject *d = PyObject_GenericGetAttr(v, DICT_NAME);
    if (d == NULL && !caught())
        return -1;
    if (d != NULL && PyDict_Check(d) && !PyType_Check(v) && !PyModule_Check(v) &&
        (PyObject *)Py_TYPE(v) != FUNCTION_TYPE) {
        /* (a snapshot first, as the Python definition's list: a name's str() or a repr later may
         * let another thread change the dict) */
        *exact = PyDict_CheckExact(d);
        int rc = *exact ? dict_snapshot(d, names, values) : items_snapshot(d, names, values);
        Py_DECREF(d);
        if (rc < 0)
            return -1;
        /* each name as str() gives it (an exact str is itself) */
        for (Py_ssize_t i = 0; i < PyList_Size(*names); i++) {
            PyObject *name = PyList_GetItem(*names, i);
            if (PyUnicode_CheckExact(name))
                continue;
            PyObject *text = PyObject_Str(name);
            if (text == NULL || PyList_SetItem(*names, i, text) < 0) {
                Py_CLEAR(*names);
                Py_CLEAR(*values);
                return -1;
            }
        }
        return 0;
    }
    Py_XDECREF(d);
    PyObject *slots = PyObject_CallFunctionObjArgs(w->slot_names, (PyObject *)Py_TYPE(v), NULL);
    if (slots == NULL)
        return -1;
    PyObject *listed = PySequence_Tuple(slots);
    Py_DECREF(slots);
    if (listed == NULL)
        return -1;
    if (PyTuple_Size(listed) == 0) {
        Py_DECREF(listed);
        return 0;
    }
    *names = PyList_New(0);
    *values = PyList_New(0);
    for (Py_ssize_t i = 0; *names != NULL && *values != NULL && i < PyTuple_Size(listed); i++) {
        PyObject *name = PyTuple_GetItem(listed, i);
        PyObject *value = PyObject_GenericGetAttr(v, name);
        if (value == NULL) {
            if (caught())
                continue; /* (a slot not set yet) */
            goto slots_error;
        }
        int rc = PyList_Append(*names, name) < 0 ? -1 : PyList_Append(*values, value);
        Py_DECREF(value);
        if (rc < 0)
            goto slots_error;
    }
    Py_DECREF(listed);
    return *names != NULL && *values != NULL ? 0 : -1;
slots_error:
    Py_DECREF(listed);
    Py_CLEAR(*names);
    Py_CLEAR(*values);
    return -1;
}

static PyObject *pair(PyObject *name, PyObject *enc) {
    /* steals `enc` */
    if (enc == NULL)
        return NULL;
    PyObject *list = PyList_New(2);
    if (list == NULL) {
        Py_DECREF(enc);
        return NULL;
    }
    Py_INCREF(name);
    PyList_SetItem(list, 0, name);
    PyList_SetItem(list, 1, enc);
    return list;
}

/* -- an object's structure, kept from its last walk ---------------------------------------------
 * A handler's `self` is walked at every line and mostly holds the same atoms each time (its path,
 * its command, its flags). A Node keeps, for an object with an exact __dict__, its attributes'
 * names and atoms as they were (the atoms themselves: equal atoms of one type have one repr), the
 * children's encodings and the structure made of them. The next walk still reads the dict and
 * still makes every text that is not an atom's (a socket's, a list's, the object's own repr:
 * anything may have changed in place), but takes the atoms' texts from the node, and where every
 * text is what it was it answers the very structure of last time, which the tracer's comparison
 * with the previous line's then finds equal at once (identity). The object's type is not kept:
 * the structure is its own text, its type's name and the children, each compared. Not a dict
 * version (PEP 509):
 * 3.13 stores into an object's inline values without changing its materialised dict's version. */
#define NODE_FIELDS 5 /* (weak reference to the object, names, atoms, encodings, structure) */

/* An atom a node may keep (a big one would be kept alive by the recorder). */
static int keepable_atom(Walk *w, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return PyUnicode_GetLength(v) < w->limit;
    if (t == &PyBytes_Type)
        return PyBytes_Size(v) < w->limit;
    if (t == &PyLong_Type)
        return small_int(v);
    return is_atom(v);
}

/* The same atom as far as its repr goes: one type and an equal value (a float's bits: 0.0 == -0.0). */
static int same_atom(PyObject *kept, PyObject *v) {
    if (kept == v)
        return 1;
    if (Py_TYPE(kept) != Py_TYPE(v))
        return 0;
    if (PyFloat_Check(v)) {
        double a = PyFloat_AsDouble(kept), b = PyFloat_AsDouble(v);
        return memcmp(&a, &b, sizeof(double)) == 0;
    }
    if (PyComplex_Check(v)) {
        double a[2] = {PyComplex_RealAsDouble(kept), PyComplex_ImagAsDouble(kept)};
        double b[2] = {PyComplex_RealAsDouble(v), PyComplex_ImagAsDouble(v)};
        return memcmp(a, b, sizeof(a)) == 0;
    }
    int same = PyObject_RichCompareBool(kept, v, Py_EQ);
    if (same < 0)
        PyErr_Clear();
    return same > 0;
}

static PyObject *node_key(PyObject *v, long depth) { return PyLong_FromVoidPtr((char *)v + depth); }

/* The object's exact __dict__ (a new reference), or NULL with no error where no node is kept. */
static PyObject *own_dict(PyObject *v) {
    if (PyType_Check(v) || PyModule_Check(v) || (PyObject *)Py_TYPE(v) == FUNCTION_TYPE)
        return NULL;
    PyObject *d = PyObject_GenericGetAttr(v, DICT_NAME);
    if (d == NULL || !PyDict_CheckExact(d)) {
        Py_XDECREF(d);
        PyErr_Clear();
        return NULL;
    }
    return d;
}

static PyObject *structure(Walk *w, PyObject *v, long depth);
static PyObject *structure_walked(Walk *w, PyObject *v, long depth, PyObject **walked);

/* A non-atom child's encoding, as `structure` makes it. */
static PyObject *child_encoding(Walk *w, PyObject *child, long depth) {
    PyObject *enc = depth > 1 ? structure(w, child, depth - 1) : (Py_INCREF(Py_None), Py_None);
    if (enc == Py_None) {
        Py_DECREF(enc);
        enc = repr_once(w, child);
    }
    return enc;
}

/* The structure from the node of (v, depth) where its names and atoms still hold; NULL with no error
 * where there is none or they do not (the walk then makes it whole). */
static PyObject *structure_from_node(Walk *w, PyObject *v, long depth, PyObject *key) {
    PyObject *node = PyDict_GetItemWithError(w->nodes, key); /* (borrowed) */
    if (node == NULL || PyWeakref_GetObject(PyTuple_GetItem(node, 0)) != v)
        return NULL;
    Py_INCREF(node); /* (a repr below may clear the cache) */
    PyObject *names = PyTuple_GetItem(node, 1), *atoms = PyTuple_GetItem(node, 2);
    PyObject *encs = PyTuple_GetItem(node, 3), *kept = PyTuple_GetItem(node, 4);
    Py_ssize_t n = PyTuple_Size(names);
    PyObject *d = own_dict(v);
    PyObject *others = d == NULL || PyDict_Size(d) != n ? NULL : PyList_New(n); /* the non-atoms, by place */
    Py_ssize_t pos = 0, i = 0;
    PyObject *name, *child;
    while (others != NULL && PyDict_Next(d, &pos, &name, &child)) {
        PyObject *was = PyTuple_GetItem(names, i);
        if (name != was && (!PyUnicode_CheckExact(name) || PyUnicode_Compare(name, was) != 0))
            break;
        PyObject *atom = PyTuple_GetItem(atoms, i);
        if (is_atom(child)) {
            if (atom == NOT_KEPT || !same_atom(atom, child))
                break;
        } else {
            if (atom != NOT_KEPT)
                break;
            Py_INCREF(child);
            PyList_SetItem(others, i, child);
        }
        i++;
    }
    Py_XDECREF(d);
    PyErr_Clear(); /* (a name compared with one that is not a str) */
    if (others == NULL || i != n) {
        Py_XDECREF(others);
        Py_DECREF(node);
        return NULL;
    }
    /* the texts that may have changed in place: every non-atom child's, and the object's own */
    PyObject *fresh = PyList_New(n);
    int same = fresh != NULL;
    for (i = 0; fresh != NULL && i < n; i++) {
        PyObject *child = PyList_GetItem(others, i), *enc;
        if (child == NULL) { /* (an atom: its text is the node's) */
            enc = PyTuple_GetItem(encs, i);
            Py_INCREF(enc);
        } else if ((enc = child_encoding(w, child, depth)) == NULL) {
            Py_CLEAR(fresh);
            break;
        } else if (same) {
            int equal = PyObject_RichCompareBool(enc, PyTuple_GetItem(encs, i), Py_EQ);
            if (equal < 0) {
                Py_DECREF(enc);
                Py_CLEAR(fresh);
                break;
            }
            same = equal;
        }
        PyList_SetItem(fresh, i, enc);
    }
    Py_DECREF(others);
    PyObject *text = fresh == NULL ? NULL : repr_once(w, v);
    PyObject *type_name = text == NULL ? NULL : PyObject_GetAttr((PyObject *)Py_TYPE(v), NAME_NAME);
    PyObject *result = NULL;
    if (type_name != NULL) {
        int equal = same ? PyObject_RichCompareBool(text, PyList_GetItem(kept, 0), Py_EQ) : 0;
        int named = equal > 0 ? PyObject_RichCompareBool(type_name, PyList_GetItem(kept, 1), Py_EQ) : 0;
        if (equal < 0 || named < 0) {
            result = NULL;
        } else if (equal && named) {
            Py_INCREF(kept);
            result = kept;
        } else {
            PyObject *children = PyList_New(n);
            for (i = 0; children != NULL && i < n; i++) {
                PyObject *enc = PyList_GetItem(fresh, i);
                Py_INCREF(enc);
                PyObject *item = pair(PyTuple_GetItem(names, i), enc);
                if (item == NULL)
                    Py_CLEAR(children);
                else
                    PyList_SetItem(children, i, item);
            }
            if (children != NULL) {
                Py_INCREF(text);
                Py_INCREF(type_name);
                result = Py_BuildValue("[NNNn]", text, type_name, children, (Py_ssize_t)0);
            }
        }
    }
    if (result == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "structure: a node could not be read");
    if (result != NULL && result != kept) { /* the node takes the new texts */
        PyObject *new_encs = PyList_AsTuple(fresh);
        PyObject *fields = new_encs == NULL ? NULL
                                            : PyTuple_Pack(NODE_FIELDS, PyTuple_GetItem(node, 0), names, atoms,
                                                           new_encs, result);
        if (fields == NULL || PyDict_SetItem(w->nodes, key, fields) < 0)
            PyErr_Clear(); /* (not kept: the structure is still right) */
        Py_XDECREF(new_encs);
        Py_XDECREF(fields);
    }
    Py_XDECREF(text);
    Py_XDECREF(type_name);
    Py_XDECREF(fresh);
    Py_DECREF(node);
    return result;
}

/* Keep a node of (v, depth) for the structure just made of it from `walked` (the names and values
 * the walk read: a value another thread rebinds meanwhile is not the one its text was made of). */
static void keep_node(Walk *w, PyObject *v, PyObject *key, PyObject *result, PyObject *walked) {
    PyObject *names = PyTuple_GetItem(walked, 0), *values = PyTuple_GetItem(walked, 1);
    PyObject *children = PyList_GetItem(result, 2);
    Py_ssize_t n = PyList_Size(names);
    if (PyList_Size(children) != n || PyList_Size(values) != n) {
        PyErr_Clear();
        return;
    }
    PyObject *kept_names = PyTuple_New(n), *atoms = PyTuple_New(n), *encs = PyTuple_New(n);
    int ok = kept_names != NULL && atoms != NULL && encs != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *name = PyList_GetItem(names, i), *child = PyList_GetItem(values, i);
        PyObject *enc = PyList_GetItem(PyList_GetItem(children, i), 1);
        PyObject *atom = is_atom(child) ? child : NOT_KEPT;
        if (!PyUnicode_CheckExact(name) || (atom != NOT_KEPT && !keepable_atom(w, child)))
            ok = 0; /* (an atom too big to keep: this object is walked whole each time) */
        Py_INCREF(name);
        Py_INCREF(atom);
        Py_INCREF(enc);
        PyTuple_SetItem(kept_names, i, name);
        PyTuple_SetItem(atoms, i, atom);
        PyTuple_SetItem(encs, i, enc);
    }
    PyObject *ref = ok ? PyWeakref_NewRef(v, NULL) : NULL;
    PyObject *node = ref == NULL ? NULL : PyTuple_Pack(NODE_FIELDS, ref, kept_names, atoms, encs, result);
    if (node != NULL) {
        if (PyDict_Size(w->nodes) >= 4096)
            PyDict_Clear(w->nodes);
        PyDict_SetItem(w->nodes, key, node);
    }
    PyErr_Clear(); /* (an object without weak references, a failed allocation: no node, same structure) */
    Py_XDECREF(ref);
    Py_XDECREF(node);
    Py_XDECREF(kept_names);
    Py_XDECREF(atoms);
    Py_XDECREF(encs);
}

/* Reprs.structure: [repr, type name, children, more], or None for an atom or a literal container. */
static PyObject *structure(Walk *w, PyObject *v, long depth) {
    if (is_atom(v) || is_literal_container(v))
        Py_RETURN_NONE;
    if (w->nodes == NULL)
        return structure_walked(w, v, depth, NULL);
    PyObject *key = node_key(v, depth);
    if (key == NULL)
        return NULL;
    PyObject *result = structure_from_node(w, v, depth, key);
    if (result == NULL && !PyErr_Occurred()) {
        PyObject *walked = NULL;
        result = structure_walked(w, v, depth, &walked);
        if (result != NULL && walked != NULL)
            keep_node(w, v, key, result, walked);
        Py_XDECREF(walked);
        if (result != NULL && PyErr_Occurred())
            PyErr_Clear(); /* (a node not kept: the structure is still right) */
    }
    Py_DECREF(key);
    return result;
}

/* The walk itself. Where `walked` is given and the object's attributes are an exact __dict__'s, none
 * cut, *walked gets (names, values) as the walk read them: what a node keeps. */
static PyObject *structure_walked(Walk *w, PyObject *v, long depth, PyObject **walked) {
    PyObject *names, *values;
    int exact;
    if (attributes(w, v, &names, &values, &exact) < 0)
        return NULL;
    PyObject *children = PyList_New(0);
    Py_ssize_t count = names == NULL ? 0 : PyList_Size(names);
    for (Py_ssize_t i = 0; children != NULL && i < count && i < w->max_children; i++) {
        PyObject *child = PyList_GetItem(values, i);
        PyObject *enc;
        if (is_atom(child)) {
            enc = repr_of(w, child); /* (no structure, and no memo: an atom's repr is cheap) */
        } else {
            enc = child_encoding(w, child, depth);
        }
        PyObject *item = pair(PyList_GetItem(names, i), enc);
        if (item == NULL || PyList_Append(children, item) < 0)
            Py_CLEAR(children);
        Py_XDECREF(item);
    }
    if (walked != NULL && children != NULL && names != NULL && exact && count <= w->max_children)
        *walked = PyTuple_Pack(2, names, values); /* (NULL: no node) */
    Py_XDECREF(names);
    Py_XDECREF(values);
    if (children == NULL)
        return NULL;
    PyObject *text = repr_once(w, v);
    PyObject *type_name = text == NULL ? NULL : PyObject_GetAttr((PyObject *)Py_TYPE(v), NAME_NAME);
    Py_ssize_t more = count > w->max_children ? count - w->max_children : 0;
    PyObject *result = type_name == NULL ? NULL : Py_BuildValue("[NNNn]", text, type_name, children, more);
    if (type_name == NULL) {
        Py_XDECREF(text);
        Py_DECREF(children);
    }
    return result;
}

/* structure(value, depth, seen, repr, slot_names, limit, max_children[, sockets[, nodes]]) */
static PyObject *structure_entry(PyObject *self, PyObject *args) {
    PyObject *value, *seen, *repr, *slot_names, *sockets = NULL, *nodes = NULL;
    long depth;
    Walk w;
    if (!PyArg_ParseTuple(args, "OlO!OOnn|O!O!", &value, &depth, &PyDict_Type, &seen, &repr, &slot_names, &w.limit,
                          &w.max_children, &PyDict_Type, &sockets, &PyDict_Type, &nodes))
        return NULL;
    if (depth < 1 || depth > 8) {
        PyErr_SetString(PyExc_ValueError, "structure: a depth from 1 to 8");
        return NULL;
    }
    w.sockets = SOCKET_TYPE != NULL ? sockets : NULL;
    w.nodes = nodes;
    w.repr = repr;
    w.slot_names = slot_names;
    w.seen = seen;
    return structure(&w, value, depth);
}

/* interrupt(holder, key, number, thread, exception): ReprGuard's deadline (values.py). Raises
 * `exception` in `thread` if the repr it runs is still number `number` (holder.busy, or
 * holder[key] where holder is the dict of the other threads' numbers). One call that never releases
 * the GIL: the thread cannot finish that repr between the look and the raise, so the exception
 * lands inside the repr, never in the program's code after it. */
static PyObject *interrupt_entry(PyObject *self, PyObject *args) {
    PyObject *holder, *key, *number, *exception, *now;
    unsigned long thread;
    if (!PyArg_ParseTuple(args, "OOOkO", &holder, &key, &number, &thread, &exception))
        return NULL;
    if (PyDict_Check(holder)) {
        now = PyDict_GetItemWithError(holder, key); /* (borrowed) */
        if (now == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_FALSE;
        }
        Py_INCREF(now);
    } else if ((now = PyObject_GetAttr(holder, key)) == NULL) {
        return NULL;
    }
    int same = PyObject_RichCompareBool(now, number, Py_EQ);
    Py_DECREF(now);
    if (same < 0)
        return NULL;
    if (!same)
        Py_RETURN_FALSE;
    return PyBool_FromLong(PyThreadState_SetAsyncExc(thread, exception) == 1);
}

/* untrack(tree): the lists, dicts and tuples of a decoded tree out of the cyclic collector's sight. */
static int untrack_tree(PyObject *v, int depth) {
    PyTypeObject *t = Py_TYPE(v);
    if (t != &PyList_Type && t != &PyDict_Type && t != &PyTuple_Type)
        return 0;
    if (depth > 64) /* (decoded data is shallow: a deeper tree stays as it is below) */
        return 0;
    if (t == &PyList_Type) {
        for (Py_ssize_t i = 0; i < PyList_Size(v); i++)
            untrack_tree(PyList_GetItem(v, i), depth + 1);
    } else if (t == &PyTuple_Type) {
        for (Py_ssize_t i = 0; i < PyTuple_Size(v); i++)
            untrack_tree(PyTuple_GetItem(v, i), depth + 1);
    } else {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(v, &pos, &key, &value))
            untrack_tree(value, depth + 1);
    }
    if (PyObject_GC_IsTracked(v))
        PyObject_GC_UnTrack(v);
    return 0;
}

static PyObject *untrack_entry(PyObject *self, PyObject *tree) {
    untrack_tree(tree, 0);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"untrack", untrack_entry, METH_O, "untrack(tree): a decoded tree's containers out of the collector's sight"},
    {"structure", structure_entry, METH_VARARGS,
     "structure(value, depth, seen, repr, slot_names, limit, max_children[, sockets[, nodes]]): Reprs.structure"
     " (values.py); `sockets` and `nodes` keep sockets' texts and objects' structures between walks"},
    {"interrupt", interrupt_entry, METH_VARARGS,
     "interrupt(holder, key, number, thread, exception): raise in the thread of a repr past its deadline"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_values", "Value structures as the recorder encodes them.",
                                    -1, module_methods};

PyMODINIT_FUNC PyInit__values(void) {
    MARK = PyUnicode_FromString("\xe2\x80\xa6");
    AT_0X = PyUnicode_InternFromString(" at 0x");
    EMPTY = PyUnicode_InternFromString("");
    DICT_NAME = PyUnicode_InternFromString("__dict__");
    NAME_NAME = PyUnicode_InternFromString("__name__");
    ITEMS_NAME = PyUnicode_InternFromString("items");
    ISSPACE_NAME = PyUnicode_InternFromString("isspace");
    OBJECT_REPR = (reprfunc)PyType_GetSlot(&PyBaseObject_Type, Py_tp_repr);
    PyObject *types = PyImport_ImportModule("types");
    if (types == NULL)
        return NULL;
    FUNCTION_TYPE = PyObject_GetAttrString(types, "FunctionType");
    Py_DECREF(types);
    REPR_NAME = PyUnicode_InternFromString("__repr__");
    CLOSED_NAME = PyUnicode_InternFromString("_closed");
    FILENO_NAME = PyUnicode_InternFromString("fileno");
    NOT_KEPT = PyUnicode_FromString("<not kept>"); /* (an object of its own, compared by identity) */
    /* (the recording child has socket imported already; where it cannot be, sockets take the slow path) */
    PyObject *socket_module = PyImport_ImportModule("socket");
    if (socket_module != NULL) {
        SOCKET_TYPE = PyObject_GetAttrString(socket_module, "socket");
        SOCKET_REPR = SOCKET_TYPE == NULL ? NULL : PyObject_GetAttr(SOCKET_TYPE, REPR_NAME);
        Py_DECREF(socket_module);
    }
    if (SOCKET_REPR == NULL)
        Py_CLEAR(SOCKET_TYPE);
    PyErr_Clear();
    if (NOT_KEPT == NULL || REPR_NAME == NULL || CLOSED_NAME == NULL || FILENO_NAME == NULL || MARK == NULL || AT_0X == NULL || EMPTY == NULL || DICT_NAME == NULL || NAME_NAME == NULL ||
        ITEMS_NAME == NULL || ISSPACE_NAME == NULL || OBJECT_REPR == NULL || FUNCTION_TYPE == NULL)
        return NULL;
    return PyModule_Create(&module);
}
