/* Skeleton records into the tree's columns, in one pass (trace/skeleton.py's EventColumns).
 *
 * The adapter reads a recording's records while the program runs on the other core. The numpy
 * passes that index them (a dozen over each batch: kinds, flags, calls, ends, depths, callers'
 * columns) cost about 20 ns an event, as much as the recording child spent per event on the
 * program itself: a long recording ended long after its program did, and the two cores' shared
 * caches slowed the program by a tenth (issue 37, nineteenth round). One pass in C costs a tenth
 * of that. skeleton.py keeps the numpy passes where this module is not built; the tests run both.
 *
 * Built against the limited API of 3.11 (one build for 3.11+), like _ctracer and _values.
 */

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* one record, as trace/skeleton.py's EVENT_DTYPE and _ctracer.c's EventRecord */
typedef struct {
    uint32_t inv;
    int32_t line;
    uint8_t kind;
    uint8_t pad[3];
} Record;

#define CALL 0
#define LINE 1
#define RETURN 2
#define KIND_MASK 0x1F
#define CAUGHT 0x80
#define LIBRARY_CALL 0x40
#define SUSPENDED 0x20

enum { RECORDS, KINDS, CAUGHTS, LINES, INVS, CALL_POS, DEPTH, END_INDEX, PARENT, CODE_OF, CALLER_LAST, RESUMES,
       LIBRARY, PAUSED, N_BUFFERS };

/* the item size each buffer must have (the columns of indices: 4 or 8, see records_index) */
static const Py_ssize_t ITEM[N_BUFFERS] = {sizeof(Record), 1, 1, 4, 4, 0, 0, 0, 0, 8, 0, 0, 1, 1};

static inline void set_index(void *column, Py_ssize_t item, long long k, long long value) {
    if (item == 4)
        ((int32_t *)column)[k] = (int32_t)value;
    else
        ((int64_t *)column)[k] = value;
}
static const char *NAME[N_BUFFERS] = {"records", "kinds", "caught", "lines", "invs", "call_pos", "depth",
                                      "end_index", "parent", "code_of", "caller_last", "resumes", "library",
                                      "paused"};

/* index(records, first, invocations, terminals, kinds, caught, lines, invs, call_pos, depth,
 *       end_index, parent, code_of, caller_last, resumes, library, paused)
 * -> (records read, invocations, terminals, library calls seen, calls or ends at line 0)
 * Reads stop before a record that names an invocation not called yet (a corrupt record: the columns
 * index with it); fewer records read than given says so. */
static PyObject *records_index(PyObject *self, PyObject *args) {
    PyObject *objects[N_BUFFERS];
    long long first, invocations, terminals;
    if (!PyArg_ParseTuple(args, "OLLLOOOOOOOOOOOOO", &objects[RECORDS], &first, &invocations, &terminals,
                          &objects[KINDS], &objects[CAUGHTS], &objects[LINES], &objects[INVS], &objects[CALL_POS],
                          &objects[DEPTH], &objects[END_INDEX], &objects[PARENT], &objects[CODE_OF],
                          &objects[CALLER_LAST], &objects[RESUMES], &objects[LIBRARY], &objects[PAUSED]))
        return NULL;
    Py_buffer views[N_BUFFERS];
    int got = 0;
    PyObject *result = NULL;
    for (; got < N_BUFFERS; got++) {
        int flags = got == RECORDS ? PyBUF_SIMPLE : PyBUF_WRITABLE;
        if (PyObject_GetBuffer(objects[got], &views[got], flags) < 0)
            goto done;
    }
    Py_ssize_t n = views[RECORDS].len / (Py_ssize_t)sizeof(Record);
    /* the per-invocation columns of indices (call_pos, depth, end_index, parent, caller_last,
     * resumes) are of 4-byte items while the event capacity fits (skeleton.py), else 8; library
     * (one byte an invocation) says how many there is room for */
    Py_ssize_t room = views[LIBRARY].len;
    Py_ssize_t index_item = room > 0 ? views[CALL_POS].len / room : 0;
    if (index_item != 4 && index_item != 8) {
        PyErr_SetString(PyExc_ValueError, "call_pos is a column of 4- or 8-byte items, as long as library");
        goto done;
    }
    for (int k = KINDS; k < N_BUFFERS; k++) {
        int of_index = k == CALL_POS || k == DEPTH || k == END_INDEX || k == PARENT || k == CALLER_LAST || k == RESUMES;
        Py_ssize_t item = of_index ? index_item : ITEM[k];
        Py_ssize_t need = k <= INVS ? first + n : invocations + n;
        if (first < 0 || invocations < 0 || terminals < 0 || views[k].len / item < need ||
            (of_index && views[k].len / item != room)) {
            PyErr_Format(PyExc_ValueError, "the %s column has no room for these records", NAME[k]);
            goto done;
        }
    }
    const Record *records = (const Record *)views[RECORDS].buf;
    uint8_t *kinds = views[KINDS].buf, *caught = views[CAUGHTS].buf, *library = views[LIBRARY].buf,
            *paused = views[PAUSED].buf;
    int32_t *lines = views[LINES].buf;
    uint32_t *invs = views[INVS].buf;
    int64_t *code_of = views[CODE_OF].buf;
    void *call_pos = views[CALL_POS].buf, *depth = views[DEPTH].buf, *end_index = views[END_INDEX].buf,
         *parent = views[PARENT].buf, *caller_last = views[CALLER_LAST].buf, *resumes = views[RESUMES].buf;
    int any_library = 0;
    Py_ssize_t zeros = 0, i = 0;
    for (; i < n; i++) {
        Record r;
        memcpy(&r, &records[i], sizeof r); /* (a view of a file's bytes: no alignment promised) */
        int kind = r.kind & KIND_MASK;
        long long at = first + i;
        /* every event belongs to an invocation whose call came at it or before */
        if ((long long)r.inv >= invocations + (kind == CALL))
            break;
        kinds[at] = (uint8_t)kind;
        caught[at] = r.kind >= CAUGHT;
        lines[at] = r.line;
        invs[at] = r.inv;
        if (kind == CALL) {
            long long j = invocations++;
            set_index(call_pos, index_item, j, at);
            set_index(depth, index_item, j, j - terminals); /* the invocations open when it starts */
            set_index(end_index, index_item, j, -1);
            set_index(parent, index_item, j, -1);
            set_index(caller_last, index_item, j, -1);
            set_index(resumes, index_item, j, -1);
            code_of[j] = -1;
            library[j] = paused[j] = 0;
        } else if (kind >= RETURN) {
            terminals++;
            set_index(end_index, index_item, r.inv, at); /* (a generator's last end is its terminal) */
            paused[r.inv] = (r.kind & SUSPENDED) != 0;
        }
        if (r.kind & LIBRARY_CALL) {
            library[r.inv] = 1;
            any_library = 1;
        }
        if (r.line == 0 && kind != LINE)
            zeros++;
    }
    result = Py_BuildValue("(nLLin)", i, invocations, terminals, any_library, zeros);
done:
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"index", records_index, METH_VARARGS, "index(records, first, invocations, terminals, *columns): see _records.c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_records", "Skeleton records into the tree's columns, in one pass.", -1, methods,
};

PyMODINIT_FUNC PyInit__records(void) { return PyModule_Create(&module); }
