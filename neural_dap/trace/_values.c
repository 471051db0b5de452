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
static PyObject *SOCKET_PARTS;  /* what socket.socket.__repr__ reads of its class, as the standard library has it */
static PyObject *SOCKET_PART_NAMES; /* ... by name */
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

/* Clear an exception the Python definition catches (`except Exception`); 0 if it did not. */
static int caught(void) {
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return 0;
    PyErr_Clear();
    return 1;
}

/* -- a socket's text, kept while what it is made of holds ------------------------------------
 * A server's request handler holds its connection (as `request`, `connection` and under `wfile`)
 * and its server the listening socket; every line of the handler walks them, and socket.__repr__
 * is Python code that formats three enums and asks the kernel for both addresses (a failed
 * getpeername raising OSError on a listening socket): a third of a request's recording. Its text
 * is a function of the object's class, `_closed`, its descriptor, family, type and protocol (fixed
 * for the object) and what getsockname and getpeername answer; the last two are asked here as the
 * repr asks them, their raw bytes in the key, so an equal key means an equal text. Only an exact
 * socket.socket whose class still has what the standard library gave it of all the repr reads (a
 * subclass, a patched repr or address method may read anything), and only a text that is the
 * repr's own (a fallback after a passing failure is made again at the next walk, as the Python
 * definition makes it). Inside the journal's sandbox both calls are refused, as the repr's are,
 * and counted among its refusals as theirs were (a hit makes the two calls where a repr made two). */

/* The answer about one of a descriptor's addresses (0 or an errno), asked as the repr asks it:
 * through the journal where it is loaded, so that inside its sandbox (a recording's reprs) the key
 * holds the refusal the repr meets, and outside it the addresses. */
static int address_of(int peer, int fd, struct sockaddr_storage *addr, socklen_t *len) {
    int rc = peer ? getpeername(fd, (struct sockaddr *)addr, len) : getsockname(fd, (struct sockaddr *)addr, len);
    return rc == 0 ? 0 : errno;
}

/* The key of a socket's text (bytes), or NULL with no error where the fast path does not apply
 * (NULL with an error: one the Python definition would not catch). */
static PyObject *socket_key(PyObject *v) {
    PyObject *closed = PyObject_GenericGetAttr(v, CLOSED_NAME);
    if (closed == NULL) {
        caught(); /* (NULL with no error, or with one the definition lets through) */
        return NULL;
    }
    int is_closed = PyObject_IsTrue(closed);
    Py_DECREF(closed);
    PyObject *fileno = is_closed < 0 ? NULL : PyObject_CallMethodObjArgs(v, FILENO_NAME, NULL);
    long fd = fileno == NULL ? -1 : PyLong_AsLong(fileno);
    Py_XDECREF(fileno);
    if (PyErr_Occurred()) {
        caught();
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
        key.own_rc = address_of(0, (int)fd, &key.own, &key.own_len);
        key.peer_rc = address_of(1, (int)fd, &key.peer, &key.peer_len);
    }
    return PyBytes_FromStringAndSize((const char *)&key, sizeof(key));
}

/* The names of what the repr reads of socket.socket (its class's own attributes). */
static PyObject *socket_part_names(void) {
    return Py_BuildValue("(sssssssss)", "__repr__", "__module__", "__qualname__", "fileno", "family", "type",
                         "proto", "getsockname", "getpeername");
}

/* What the repr reads of socket.socket now, each by identity, as a tuple. */
static PyObject *socket_parts(void) {
    Py_ssize_t n = PyTuple_Size(SOCKET_PART_NAMES);
    PyObject *parts = PyTuple_New(n);
    for (Py_ssize_t i = 0; parts != NULL && i < n; i++) {
        PyObject *part = PyObject_GetAttr(SOCKET_TYPE, PyTuple_GetItem(SOCKET_PART_NAMES, i));
        if (part == NULL)
            Py_CLEAR(parts);
        else
            PyTuple_SetItem(parts, i, part);
    }
    return parts;
}

/* Whether socket.socket still has, of all its repr reads, what the standard library gave it. */
static int socket_as_shipped(void) {
    for (Py_ssize_t i = 0; i < PyTuple_Size(SOCKET_PART_NAMES); i++) {
        PyObject *part = PyObject_GetAttr(SOCKET_TYPE, PyTuple_GetItem(SOCKET_PART_NAMES, i));
        if (part == NULL)
            return caught() ? 0 : -1;
        Py_DECREF(part); /* (only its identity is compared: the class holds it) */
        if (part != PyTuple_GetItem(SOCKET_PARTS, i))
            return 0;
    }
    return 1;
}

/* The repr's own text (`<socket.socket fd=...`, `<socket.socket [closed] fd=...`), not a fallback. */
static int socket_repr_text(PyObject *text) {
    static const char *starts[] = {"<socket.socket fd=", "<socket.socket [closed] fd="};
    if (text == NULL || !PyUnicode_Check(text))
        return 0;
    for (int i = 0; i < 2; i++) {
        PyObject *start = PyUnicode_FromString(starts[i]);
        Py_ssize_t found = start == NULL ? -1 : PyUnicode_Tailmatch(text, start, 0, PY_SSIZE_T_MAX, -1);
        Py_XDECREF(start);
        if (found < 0) {
            PyErr_Clear();
            return 0;
        }
        if (found)
            return 1;
    }
    return 0;
}

/* A dict of (weak reference, ...) tuples, bounded: the entries of objects that have died go first. */
static void make_room(PyObject *cache, Py_ssize_t most) {
    if (PyDict_Size(cache) < most)
        return;
    PyObject *keys = PyDict_Keys(cache);
    for (Py_ssize_t i = 0; keys != NULL && i < PyList_Size(keys); i++) {
        PyObject *entry = PyDict_GetItemWithError(cache, PyList_GetItem(keys, i));
        if (entry != NULL && PyWeakref_GetObject(PyTuple_GetItem(entry, 0)) == Py_None)
            PyDict_DelItem(cache, PyList_GetItem(keys, i));
    }
    Py_XDECREF(keys);
    if (PyDict_Size(cache) >= most)
        PyDict_Clear(cache);
    PyErr_Clear();
}

/* Reprs.repr of an exact socket.socket from w->sockets, or made and kept there; NULL with no error
 * where the fast path does not apply. */
static PyObject *socket_text(Walk *w, PyObject *v) {
    int standard = socket_as_shipped();
    if (standard <= 0)
        return NULL;
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
    PyObject *after = text == NULL || !socket_repr_text(text) ? NULL : socket_key(v);
    if (after == NULL && text != NULL && PyErr_Occurred()) { /* (only an error the definition lets through) */
        Py_CLEAR(text);
    } else if (after != NULL && PyObject_RichCompareBool(after, key, Py_EQ) > 0) {
        make_room(w->sockets, 1024);
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
 * an exact __dict__'s; -1 on error. `given`: the object's __dict__ read already (read once a walk:
 * a __dict__ property is the program's code). */
static int attributes(Walk *w, PyObject *v, PyObject *given, PyObject **names, PyObject **values, int *exact) {
    *names = *values = NULL;
    *exact = 0;
    PyObject *d = given != NULL ? (Py_INCREF(given), given) : PyObject_GenericGetAttr(v, DICT_NAME);
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

/* A list of the walk's own making (texts, and lists of texts) out of the cyclic collector's sight:
 * a structure can hold no cycle, and a full capture keeps tens of thousands of them waiting for
 * the channel, which the collections CPython runs as objects are made walked again and again (a
 * tenth of a recording child's time on an object-heavy threaded program). */
static PyObject *untracked(PyObject *list) {
    if (list != NULL && PyObject_GC_IsTracked(list))
        PyObject_GC_UnTrack(list);
    return list;
}

static PyObject *pair(PyObject *name, PyObject *enc) {
    /* steals `enc` */
    if (enc == NULL)
        return NULL;
    PyObject *list = untracked(PyList_New(2));
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
 * still makes every text that is not a kept atom's (a socket's, a list's, the object's own repr:
 * anything may have changed in place; an atom rebound since), but takes the texts of the atoms
 * that are still there from the node, and where every
 * text is what it was it answers the very structure of last time, which the tracer's comparison
 * with the previous line's then finds equal at once (identity). The object's type is not kept:
 * the structure is its own text, its type's name and the children, each compared. Not a dict
 * version (PEP 509):
 * 3.13 stores into an object's inline values without changing its materialised dict's version. */
#define NODE_FIELDS 5 /* (weak reference to the object, names, atoms, encodings, structure) */

/* Whether a structure's texts add up to more than `budget` characters (walked only that far). */
static int larger_than(PyObject *enc, Py_ssize_t *budget) {
    if (PyUnicode_Check(enc))
        *budget -= PyUnicode_GetLength(enc);
    else if (PyList_Check(enc))
        for (Py_ssize_t i = 0; *budget >= 0 && i < PyList_Size(enc); i++)
            larger_than(PyList_GetItem(enc, i), budget);
    return *budget < 0;
}

/* The most characters of text one node keeps: past it an object is walked whole each time, so the
 * cache stays within NODES_KEPT times this (64 million characters) whatever the program holds. */
#define NODE_TEXT 65536
#define NODES_KEPT 1024

/* An atom a node may keep with its text `enc`: one whose text is made here in C (plain_atom: no
 * guard, no fallback), or a short bytes whose text is its repr (not a fallback of Reprs.repr's after
 * a passing failure, which the definition makes again at the next walk). A big atom would be kept
 * alive by the recorder. */
static int keepable_atom(Walk *w, PyObject *v, PyObject *enc) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyFloat_Type)
        return w->limit >= 32; /* (below, Reprs.repr may cut a float's text: it decides) */
    if (plain_atom(w, v))
        return 1;
    if (t != &PyBytes_Type || PyBytes_Size(v) >= w->limit || !PyUnicode_Check(enc) || PyUnicode_GetLength(enc) < 3)
        return 0;
    Py_UCS4 first = PyUnicode_ReadChar(enc, 0), second = PyUnicode_ReadChar(enc, 1);
    return first == 'b' && (second == '\'' || second == '"');
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

/* The object's __dict__ as the walk reads it (a new reference), or NULL: none (no error), or an
 * error the definition lets through. */
static PyObject *own_dict(PyObject *v) {
    if (PyType_Check(v) || PyModule_Check(v) || (PyObject *)Py_TYPE(v) == FUNCTION_TYPE)
        return NULL;
    PyObject *d = PyObject_GenericGetAttr(v, DICT_NAME);
    if (d == NULL) {
        caught(); /* (NULL with no error, or with one the definition lets through) */
        return NULL;
    }
    return d;
}

static PyObject *structure(Walk *w, PyObject *v, long depth);
static PyObject *structure_walked(Walk *w, PyObject *v, long depth, PyObject *given, PyObject **walked);
static void keep_node(Walk *w, PyObject *v, PyObject *key, PyObject *result, PyObject *walked);

/* The structure of (v, depth) walked whole (from `given`, its __dict__ read already, if any), and a
 * node kept of it where one can be. */
static PyObject *walked_and_kept(Walk *w, PyObject *v, long depth, PyObject *given, PyObject *key) {
    PyObject *walked = NULL;
    PyObject *result = structure_walked(w, v, depth, given, &walked);
    if (result != NULL && walked != NULL)
        keep_node(w, v, key, result, walked);
    Py_XDECREF(walked);
    if (result != NULL && PyErr_Occurred())
        PyErr_Clear(); /* (a node not kept: the structure is still right) */
    return result;
}

/* A non-atom child's encoding, as `structure` makes it. */
static PyObject *child_encoding(Walk *w, PyObject *child, long depth) {
    PyObject *enc = depth > 1 ? structure(w, child, depth - 1) : (Py_INCREF(Py_None), Py_None);
    if (enc == Py_None) {
        Py_DECREF(enc);
        enc = repr_once(w, child);
    }
    return enc;
}

/* The structure of (v, depth), from its node where the names and atoms it kept still hold, else
 * walked from the __dict__ read here (and a node kept of it); NULL with no error where there is no
 * node or no exact __dict__ to read (the caller walks). */
static PyObject *structure_from_node(Walk *w, PyObject *v, long depth, PyObject *key) {
    PyObject *node = PyDict_GetItemWithError(w->nodes, key); /* (borrowed) */
    if (node == NULL || PyWeakref_GetObject(PyTuple_GetItem(node, 0)) != v)
        return NULL;
    PyObject *kept = PyTuple_GetItem(node, 4);
    if (!PyList_Check(kept) || PyList_Size(kept) != 4) /* (a structure handed out and changed since) */
        return NULL;
    PyTypeObject *type = Py_TYPE(v); /* (as the definition reads it: before any repr) */
    PyObject *d = own_dict(v);
    if (d == NULL)
        return NULL;
    if (!PyDict_CheckExact(d)) { /* (no node holds: walked from the dict read here) */
        PyObject *result = structure_walked(w, v, depth, d, NULL);
        Py_DECREF(d);
        return result != NULL || PyErr_Occurred() ? result : NULL;
    }
    Py_INCREF(node); /* (a repr below may empty the cache) */
    Py_INCREF((PyObject *)type);
    PyObject *names = PyTuple_GetItem(node, 1), *atoms = PyTuple_GetItem(node, 2);
    PyObject *encs = PyTuple_GetItem(node, 3);
    Py_ssize_t n = PyTuple_Size(names);
    /* by place, the children whose text is made again (NOT_KEPT where an atom the node kept is
     * there still: its text is the node's): filled before any code runs, so a repr that finds this
     * list (gc.get_objects) never meets an empty slot */
    PyObject *others = PyDict_Size(d) != n ? NULL : PyList_New(n);
    for (Py_ssize_t i = 0; others != NULL && i < n; i++) {
        Py_INCREF(NOT_KEPT);
        PyList_SetItem(others, i, NOT_KEPT);
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *name, *child;
    while (others != NULL && PyDict_Next(d, &pos, &name, &child)) {
        if (child == NOT_KEPT) /* (the mark itself, reached by the program through gc: walked whole) */
            break;
        PyObject *was = PyTuple_GetItem(names, i);
        if (name != was && (!PyUnicode_CheckExact(name) || PyUnicode_Compare(name, was) != 0))
            break;
        PyObject *atom = PyTuple_GetItem(atoms, i);
        if (atom == NOT_KEPT || !is_atom(child) || !same_atom(atom, child)) {
            Py_INCREF(child);
            PyList_SetItem(others, i, child);
        }
        i++;
    }
    PyErr_Clear(); /* (no error can come of the loop but a failed list; a name compared is an exact str) */
    PyObject *result = NULL;
    if (others == NULL || i != n) { /* the node no longer holds: a walk of the dict read here */
        Py_XDECREF(others);
        result = walked_and_kept(w, v, depth, d, key);
        Py_DECREF(d);
        Py_DECREF((PyObject *)type);
        Py_DECREF(node);
        return result;
    }
    Py_DECREF(d);
    /* the texts that may have changed in place: every non-atom child's, and the object's own */
    PyObject *fresh = PyList_New(n);
    for (i = 0; fresh != NULL && i < n; i++) {
        Py_INCREF(Py_None);
        PyList_SetItem(fresh, i, Py_None);
    }
    int same = fresh != NULL;
    for (i = 0; fresh != NULL && i < n; i++) {
        PyObject *child = PyList_GetItem(others, i), *enc;
        if (child == NOT_KEPT) { /* (an atom the node kept: its text is the node's) */
            enc = PyTuple_GetItem(encs, i);
            Py_INCREF(enc);
        } else if ((enc = is_atom(child) ? repr_of(w, child) : child_encoding(w, child, depth)) == NULL) {
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
    PyObject *text = fresh == NULL ? NULL : repr_once(w, v);
    PyObject *type_name = text == NULL ? NULL : PyObject_GetAttr((PyObject *)type, NAME_NAME);
    if (type_name != NULL) {
        int equal = same ? PyObject_RichCompareBool(text, PyList_GetItem(kept, 0), Py_EQ) : 0;
        int named = equal > 0 ? PyObject_RichCompareBool(type_name, PyList_GetItem(kept, 1), Py_EQ) : 0;
        if (equal < 0 || named < 0) {
            result = NULL;
        } else if (equal && named) {
            Py_INCREF(kept);
            result = kept;
        } else {
            PyObject *children = untracked(PyList_New(n));
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
                result = untracked(Py_BuildValue("[NNNn]", text, type_name, children, (Py_ssize_t)0));
            }
        }
    }
    if (result == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "structure: a node could not be read");
    Py_ssize_t budget = NODE_TEXT;
    if (result != NULL && result != kept && larger_than(result, &budget)) {
        if (PyDict_DelItem(w->nodes, key) < 0) /* (grown past what a node keeps: walked whole from now) */
            PyErr_Clear();
    } else if (result != NULL && result != kept) { /* the node takes the new texts, and their atoms */
        PyObject *new_encs = PyList_AsTuple(fresh), *new_atoms = PyTuple_New(n);
        for (i = 0; new_encs != NULL && new_atoms != NULL && i < n; i++) {
            PyObject *child = PyList_GetItem(others, i);
            PyObject *atom = child == NOT_KEPT ? PyTuple_GetItem(atoms, i)
                             : is_atom(child) && keepable_atom(w, child, PyTuple_GetItem(new_encs, i)) ? child
                                                                                                       : NOT_KEPT;
            Py_INCREF(atom);
            PyTuple_SetItem(new_atoms, i, atom);
        }
        PyObject *fields = new_encs == NULL || new_atoms == NULL
                               ? NULL
                               : PyTuple_Pack(NODE_FIELDS, PyTuple_GetItem(node, 0), names, new_atoms, new_encs, result);
        if (fields == NULL || PyDict_SetItem(w->nodes, key, fields) < 0)
            PyErr_Clear(); /* (not kept: the structure is still right) */
        Py_XDECREF(new_encs);
        Py_XDECREF(new_atoms);
        Py_XDECREF(fields);
    }
    Py_XDECREF(text);
    Py_XDECREF(type_name);
    Py_XDECREF(fresh);
    Py_DECREF(others);
    Py_DECREF((PyObject *)type);
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
        /* (an atom that cannot be kept has its text made again at each walk, as a non-atom's) */
        PyObject *atom = is_atom(child) && keepable_atom(w, child, enc) ? child : NOT_KEPT;
        ok = PyUnicode_CheckExact(name);
        Py_INCREF(name);
        Py_INCREF(atom);
        Py_INCREF(enc);
        PyTuple_SetItem(kept_names, i, name);
        PyTuple_SetItem(atoms, i, atom);
        PyTuple_SetItem(encs, i, enc);
    }
    Py_ssize_t budget = NODE_TEXT;
    PyObject *ref = ok && !larger_than(result, &budget) ? PyWeakref_NewRef(v, NULL) : NULL;
    PyObject *node = ref == NULL ? NULL : PyTuple_Pack(NODE_FIELDS, ref, kept_names, atoms, encs, result);
    if (node != NULL) {
        make_room(w->nodes, NODES_KEPT);
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
        return structure_walked(w, v, depth, NULL, NULL);
    PyObject *key = node_key(v, depth);
    if (key == NULL)
        return NULL;
    PyObject *result = structure_from_node(w, v, depth, key);
    if (result == NULL && !PyErr_Occurred())
        result = walked_and_kept(w, v, depth, NULL, key);
    Py_DECREF(key);
    return result;
}

/* The walk itself. Where `walked` is given and the object's attributes are an exact __dict__'s, none
 * cut, *walked gets (names, values) as the walk read them: what a node keeps. */
static PyObject *structure_walked(Walk *w, PyObject *v, long depth, PyObject *given, PyObject **walked) {
    PyObject *names, *values;
    int exact;
    PyObject *type = (PyObject *)Py_TYPE(v); /* (as the definition reads it: before any repr) */
    if (attributes(w, v, given, &names, &values, &exact) < 0)
        return NULL;
    Py_INCREF(type);
    PyObject *children = untracked(PyList_New(0));
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
    if (walked != NULL && children != NULL && names != NULL && exact && count <= w->max_children &&
        (*walked = PyTuple_Pack(2, names, values)) == NULL)
        PyErr_Clear(); /* (no node) */
    Py_XDECREF(names);
    Py_XDECREF(values);
    if (children == NULL) {
        Py_DECREF(type);
        return NULL;
    }
    PyObject *text = repr_once(w, v);
    PyObject *type_name = text == NULL ? NULL : PyObject_GetAttr(type, NAME_NAME);
    Py_DECREF(type);
    Py_ssize_t more = count > w->max_children ? count - w->max_children : 0;
    PyObject *result = type_name == NULL ? NULL : untracked(Py_BuildValue("[NNNn]", text, type_name, children, more));
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
    CLOSED_NAME = PyUnicode_InternFromString("_closed");
    FILENO_NAME = PyUnicode_InternFromString("fileno");
    NOT_KEPT = PyUnicode_FromString("<not kept>"); /* (an object of its own, compared by identity) */
    /* (the recording child has socket imported already; where it cannot be, sockets take the slow path) */
    PyObject *socket_module = PyImport_ImportModule("socket");
    if (socket_module != NULL) {
        SOCKET_TYPE = PyObject_GetAttrString(socket_module, "socket");
        SOCKET_PART_NAMES = SOCKET_TYPE == NULL ? NULL : socket_part_names();
        SOCKET_PARTS = SOCKET_PART_NAMES == NULL ? NULL : socket_parts();
        Py_DECREF(socket_module);
    }
    if (SOCKET_PARTS == NULL)
        Py_CLEAR(SOCKET_TYPE);
    PyErr_Clear();
    if (NOT_KEPT == NULL || CLOSED_NAME == NULL || FILENO_NAME == NULL || MARK == NULL || AT_0X == NULL || EMPTY == NULL || DICT_NAME == NULL || NAME_NAME == NULL ||
        ITEMS_NAME == NULL || ISSPACE_NAME == NULL || OBJECT_REPR == NULL || FUNCTION_TYPE == NULL)
        return NULL;
    return PyModule_Create(&module);
}
