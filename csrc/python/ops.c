/* Binding of element ops and traced programs (ops/op.h, ops/program.h).
 *
 * The Python tracer (conveyor/framework/tracing.py) checks arguments and
 * computes specs; run_op (one op run eagerly on arrays, without the GIL) and
 * program (a traced function compiled into a capsule map() accepts) take
 * them normalized (their signatures: the method table). A node is (op name,
 * input value ids, attrs, string, obj, num_outputs, op_seed), value ids
 * (inputs, results) an array.array("i"); rng is (seed0, seed1, op_seed,
 * node, epoch, index). attrs: the op's attributes by the names it declares
 * (CvOp.int_attrs, .float_attrs), as the text tracing.attr_text writes from
 * a dict and ops/op.c parses (cv_op_attrs_parse); run_op's `floats` is then
 * empty. run_op also takes the raw form, attrs a sequence of ints and
 * floats a sequence of floats placed slot by slot, which tests use to probe
 * the ops' own checks on malformed attributes. `obj` is an op-specific
 * capsule (an Example parser config) or None: the op gets its pointer. */
#include "python/binding.h"

#include "ops/program.h"
#include "ops/regex.h"

/* Put the ints or floats of the raw form (a sequence) into attrs from slot
 * 0 on: the count put, or -1 with an exception set. */
static int put_values(PyObject *values, bool is_float, int room, CvOpAttrs *attrs)
{
    PyObject *fast = PySequence_Fast(values, "raw attributes must be a sequence");
    Py_ssize_t n = fast ? PySequence_Fast_GET_SIZE(fast) : 0;
    if (n > room)
        PyErr_SetString(PyExc_ValueError, "too many values for an op attribute");
    for (Py_ssize_t k = 0; !PyErr_Occurred() && k < n; k++) {
        PyObject *v = PySequence_Fast_GET_ITEM(fast, k);
        if (is_float)
            attrs->floats[k] = PyFloat_AsDouble(v);
        else
            attrs->ints[k] = PyLong_AsLongLong(v);
    }
    Py_XDECREF(fast);
    return PyErr_Occurred() ? -1 : (int)n;
}

/* Fill attrs from Python values: `named` the named attributes as text
 * (ops/op.h: cv_op_attrs_parse; `floats` then empty or NULL) or, with
 * `floats` not NULL, the raw form (positional ints and floats, slot by
 * slot); -1 with an exception set on failure. */
static int attrs_from_python(const CvOp *op, PyObject *named, PyObject *floats, PyObject *string,
                             PyObject *obj, CvOpAttrs *attrs)
{
    memset(attrs, 0, sizeof(*attrs));
    bool is_text = PyUnicode_Check(named);
    Py_ssize_t stray = is_text && floats ? PyObject_Length(floats) : 0; /* -1: an error set */
    const char *text = is_text && stray == 0 ? PyUnicode_AsUTF8(named) : NULL;
    CvStatus s = CV_STATUS_OK;
    if (stray > 0)
        PyErr_Format(PyExc_TypeError, "%s: floats are named attributes too", op->name);
    else if (!is_text && !floats)
        PyErr_Format(PyExc_TypeError, "%s: attributes must be named (a dict)", op->name);
    else if (text && (s = cv_op_attrs_parse(op, text, attrs))) /* raised as an argument's */
        PyErr_SetString(PyExc_TypeError, s->message);
    else if (!is_text && (attrs->num_ints = put_values(named, false, CV_OP_MAX_INTS, attrs)) >= 0)
        attrs->num_floats = put_values(floats, true, CV_OP_MAX_FLOATS, attrs);
    cv_status_free(s);
    Py_ssize_t n = 0; /* the string may hold NULs (a pattern and its rewrite) */
    text = PyErr_Occurred() || string == Py_None ? NULL : PyUnicode_AsUTF8AndSize(string, &n);
    if (text && !(attrs->string = malloc((size_t)n + 1)))
        PyErr_NoMemory();
    else if (text)
        memcpy(attrs->string, text, (size_t)n + 1);
    /* obj: a capsule; the op gets its pointer, the program keeps the capsule. */
    if (!PyErr_Occurred() && PyCapsule_CheckExact(obj))
        attrs->object = PyCapsule_GetPointer(obj, PyCapsule_GetName(obj));
    if (!PyErr_Occurred() && obj != Py_None && !attrs->object)
        PyErr_Format(PyExc_TypeError, "op object must be a capsule, got %s", Py_TYPE(obj)->tp_name);
    if (attrs->object) {
        attrs->owner = Py_NewRef(obj);
        attrs->release_owner = cv_python_decref; /* any thread */
    }
    if (!PyErr_Occurred())
        return 0;
    /* Under the GIL here: drop the capsule directly. */
    Py_XDECREF((PyObject *)attrs->owner);
    attrs->owner = NULL;
    attrs->release_owner = NULL;
    cv_op_attrs_clear(attrs);
    return -1;
}

static const CvOp *op_arg(PyObject *name)
{
    const char *text = PyUnicode_AsUTF8(name);
    if (!text)
        return NULL;
    const CvOp *op = cv_op_find(text);
    if (!op)
        PyErr_Format(PyExc_ValueError, "unknown element op %R", name);
    return op;
}

static PyObject *ops_run_op(PyObject *module, PyObject *args)
{
    PyObject *name, *inputs, *ints, *floats, *string, *obj;
    int num_out;
    unsigned long long seed0, seed1, epoch, index;
    long long op_seed;
    int node;
    if (!PyArg_ParseTuple(args, "UOOOOOi(KKLiKK):run_op", &name, &inputs, &ints, &floats, &string,
                          &obj, &num_out, &seed0, &seed1, &op_seed, &node, &epoch, &index))
        return NULL;
    CvModuleState *st = cv_get_state(module);
    const CvOp *op = op_arg(name);
    if (!op)
        return NULL;
    if (num_out < 1 || num_out > 4096) {
        PyErr_SetString(PyExc_ValueError, "num_outputs out of range");
        return NULL;
    }
    CvOpAttrs attrs;
    CvElement in = {0}, out = {0};
    PyObject *result = NULL;
    if (attrs_from_python(op, ints, floats, string, obj, &attrs) < 0)
        return NULL;
    CvStatus s = cv_element_from_sequence(st, inputs, &in);
    if (!s)
        s = cv_element_init(&out, (uint32_t)num_out);
    if (!s) {
        uint64_t seed[2] = {seed0, seed1};
        CvElementId id = {epoch, index};
        CV_UNLOCKED(s = cv_op_run_eager(op, &attrs, in.t, (int)in.n, out.t, num_out, seed, op_seed,
                                        node, &id));
    }
    if (s)
        cv_raise_status(st, s);
    else
        result = cv_element_to_tuple(st, &out, true); /* EagerTensors, as TF's eager ops */
    cv_element_clear(&in);
    cv_element_clear(&out);
    cv_op_attrs_clear(&attrs); /* the capsule's reference: GIL held, fine */
    return result;
}

/* program(...): value ids (a node's inputs, the results) come as buffers of
 * C ints (array.array("i"), tracing.py), one node after another. */
static PyObject *ops_program(PyObject *module, PyObject *args)
{
    const char *name;
    int num_args;
    PyObject *constants, *nodes;
    Py_buffer ids = {0};
    unsigned long long seed0, seed1;
    if (!PyArg_ParseTuple(args, "siOOy*KK:program", &name, &num_args, &constants, &nodes, &ids,
                          &seed0, &seed1))
        return NULL;
    CvModuleState *st = cv_get_state(module);
    uint64_t seed[2] = {seed0, seed1};
    CvProgram *p = NULL;
    CvElement consts = {0}; /* each tensor passes to the program */
    CvStatus s = cv_program_new(name, num_args, seed, &p);
    PyObject *fn = NULL;
    if (s || (s = cv_element_from_sequence(st, constants, &consts)))
        goto status;
    for (uint32_t i = 0; i < consts.n; i++)
        if ((s = cv_program_add_constant(p, &consts.t[i])))
            goto status;
    if (!(fn = PySequence_Fast(nodes, "nodes must be a sequence")))
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fn); i++) {
        PyObject *opname, *named, *string, *obj;
        Py_buffer in;
        int num_out;
        long long op_seed;
        CvOpAttrs attrs;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fn, i), "Uy*OOOiL:program node", &opname,
                              &in, &named, &string, &obj, &num_out, &op_seed))
            goto error;
        const CvOp *op = op_arg(opname);
        if (!op || attrs_from_python(op, named, NULL, string, obj, &attrs) < 0) {
            PyBuffer_Release(&in);
            goto error;
        }
        s = cv_program_add_node(p, op, &attrs, in.buf, (int)(in.len / (Py_ssize_t)sizeof(int)),
                                num_out, op_seed);
        PyBuffer_Release(&in);
        if (s)
            goto status;
    }
    if ((s = cv_program_finish(p, ids.buf, (int)(ids.len / (Py_ssize_t)sizeof(int)))))
        goto status;
    PyBuffer_Release(&ids);
    cv_element_clear(&consts);
    Py_DECREF(fn);
    return cv_handle_new(CV_HANDLE_PROGRAM, p);
status:
    cv_raise_status(st, s);
error:
    PyBuffer_Release(&ids);
    cv_element_clear(&consts);
    Py_XDECREF(fn);
    cv_program_unref(p);
    return NULL;
}

CvStatus cv_function_from_arg(PyObject *module, PyObject *fn, PyObject *out_convert,
                              PyObject *name, int with_id, CvFunction *out)
{
    if (cv_handle_is(fn, CV_HANDLE_PROGRAM)) {
        *out = cv_program_function(cv_handle_arg(fn, CV_HANDLE_PROGRAM));
        return CV_STATUS_OK;
    }
    return cv_function_from_python(module, fn, out_convert, name, with_id, out);
}

/* run_program(program, components, epoch, index): one element through a
 * compiled program, on this thread (tests and eager checks). */
static PyObject *ops_run_program(PyObject *module, PyObject *args)
{
    PyObject *capsule, *components;
    unsigned long long epoch, index;
    if (!PyArg_ParseTuple(args, "OOKK:run_program", &capsule, &components, &epoch, &index))
        return NULL;
    CvProgram *p = cv_handle_arg(capsule, CV_HANDLE_PROGRAM);
    if (!p)
        return NULL;
    CvModuleState *st = cv_get_state(module);
    CvElement in = {0}, out = {0};
    CvElementId id = {epoch, index};
    PyObject *result = NULL;
    CvStatus s = cv_element_from_sequence(st, components, &in);
    if (!s)
        CV_UNLOCKED(s = cv_program_run(p, &in, &id, &out));
    if (s)
        cv_raise_status(st, s);
    else
        result = cv_element_to_tuple(st, &out, false);
    cv_element_clear(&in);
    cv_element_clear(&out);
    return result;
}

/* regex_compile(pattern): a compiled regex (ops/regex.h) for the regex ops'
 * obj attribute, so a program compiles its pattern once; an invalid one
 * raises InvalidArgumentError. */
static PyObject *ops_regex_compile(PyObject *module, PyObject *args)
{
    const char *pattern;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "s#:regex_compile", &pattern, &n))
        return NULL;
    CvRegex *re = NULL;
    CvStatus s = cv_regex_compile(pattern, (size_t)n, &re);
    return s ? cv_raise_status(cv_get_state(module), s) : cv_handle_new(CV_HANDLE_REGEX, re);
}

PyMethodDef cv_op_functions[] = {
    {"regex_compile", ops_regex_compile, METH_VARARGS,
     "regex_compile(pattern) -> compiled regex capsule (the regex ops' obj)"},
    {"run_op", ops_run_op, METH_VARARGS,
     "run_op(name, inputs, attrs, floats, string, obj, num_outputs, rng) -> tuple of arrays"},
    {"program", ops_program, METH_VARARGS,
     "program(name, num_args, constants, nodes, results, seed0, seed1) -> Program capsule"},
    {"run_program", ops_run_program, METH_VARARGS,
     "run_program(program, components, epoch, index) -> tuple of arrays"},
    {NULL, NULL, 0, NULL},
};
