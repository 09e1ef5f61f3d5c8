/* Traced element programs: build and run. The op contract's own helpers
 * (attributes, the random stream, cv_op_output) are in ops/op.c. */
#include <stdlib.h>
#include <string.h>

#include "ops/program.h"

typedef struct {
    const CvOp *op;
    CvOpAttrs attrs;
    int *inputs; /* owned, num_inputs value ids */
    int num_inputs;
    int num_outputs;
    int first_output; /* value id of output 0 */
    int64_t op_seed;
    int result_of; /* the one result that output 0 is, else -1: it may go to dests[result_of] */
    /* The next num_epilogues nodes are folded into this one's output (see
     * cv_program_finish). */
    int num_epilogues;
    bool folded; /* done by a node before: its output becomes this node's */
    CvEpilogue epilogue[CV_MAX_EPILOGUES];
} Node;

struct CvProgram {
    atomic_long refcount;
    char *name;
    uint64_t seed[2];
    int num_args;
    int num_values; /* args + constants + node outputs so far */
    CvTensor *constants;
    int num_constants;
    Node *nodes;
    int num_nodes;
    int *results;
    int num_results;
    /* Per value: the node after which it is no longer needed (num_nodes for
     * results and unused values, which are dropped at the end). */
    int *last_use;
    int max_inputs; /* the most inputs of any node (sizes run()'s argument array) */
    bool finished;
};

/* -- building ------------------------------------------------------------ */

CvStatus cv_program_new(const char *name, int num_args, const uint64_t seed[2], CvProgram **out)
{
    CvProgram *p = calloc(1, sizeof(*p));
    if (!p || !(p->name = strdup(name ? name : "map function"))) {
        free(p);
        return cv_error_nomem();
    }
    atomic_init(&p->refcount, 1);
    p->seed[0] = seed[0];
    p->seed[1] = seed[1];
    p->num_args = num_args;
    p->num_values = num_args;
    *out = p;
    return CV_STATUS_OK;
}

/* Constants are numbered right after the args, so they all come before the
 * first node. */
CvStatus cv_program_add_constant(CvProgram *p, CvTensor *value)
{
    CvTensor *grown = NULL;
    if (p->finished || p->num_nodes > 0) {
        cv_tensor_clear(value);
        return cv_error(CV_FAILED_PRECONDITION, "program constants must precede its nodes");
    }
    grown = realloc(p->constants, (size_t)(p->num_constants + 1) * sizeof(*grown));
    if (!grown) {
        cv_tensor_clear(value);
        return cv_error_nomem();
    }
    p->constants = grown;
    p->constants[p->num_constants++] = *value;
    memset(value, 0, sizeof(*value));
    p->num_values++;
    return CV_STATUS_OK;
}

CvStatus cv_program_add_node(CvProgram *p, const CvOp *op, CvOpAttrs *attrs, const int *inputs,
                             int num_inputs, int num_outputs, int64_t op_seed)
{
    CvStatus s = CV_STATUS_OK;
    Node node = {.op = op, .num_inputs = num_inputs, .num_outputs = num_outputs, .op_seed = op_seed};
    if (p->finished || num_inputs < op->min_inputs || num_inputs > op->max_inputs ||
        num_outputs < 1 || num_outputs > CV_OP_MAX_ARITY) {
        s = cv_error(CV_INVALID_ARGUMENT, "%s: %d inputs and %d outputs do not fit the op", op->name,
                     num_inputs, num_outputs);
        goto fail;
    }
    for (int i = 0; i < num_inputs; i++) {
        if (inputs[i] < 0 || inputs[i] >= p->num_values) {
            s = cv_error(CV_INVALID_ARGUMENT, "%s: input %d refers to value %d of %d", op->name, i,
                         inputs[i], p->num_values);
            goto fail;
        }
    }
    Node *grown = realloc(p->nodes, (size_t)(p->num_nodes + 1) * sizeof(*grown));
    node.inputs = malloc((size_t)(num_inputs > 0 ? num_inputs : 1) * sizeof(int));
    if (!grown || !node.inputs) {
        if (grown)
            p->nodes = grown;
        s = cv_error_nomem();
        goto fail;
    }
    p->nodes = grown;
    if (num_inputs > 0)
        memcpy(node.inputs, inputs, (size_t)num_inputs * sizeof(int));
    node.attrs = *attrs;
    memset(attrs, 0, sizeof(*attrs));
    node.first_output = p->num_values;
    p->num_values += num_outputs;
    p->nodes[p->num_nodes++] = node;
    return CV_STATUS_OK;
fail:
    free(node.inputs);
    cv_op_attrs_clear(attrs);
    return s;
}

/* The one result that node n's output 0 is, when nothing else uses that
 * value, so that it may be written straight into dests[result]; else -1. A
 * value that is two results, or a result and a later node's input, needs
 * memory of its own. */
static int sole_result(const CvProgram *p, int n, const int *results, int num_results)
{
    int v = p->nodes[n].first_output, found = -1;
    for (int i = 0; i < num_results; i++) {
        if (results[i] != v)
            continue;
        if (found >= 0)
            return -1;
        found = i;
    }
    for (int k = n + 1; found >= 0 && k < p->num_nodes; k++)
        for (int i = 0; i < p->nodes[k].num_inputs; i++)
            if (p->nodes[k].inputs[i] == v)
                return -1;
    return found;
}

CvStatus cv_program_finish(CvProgram *p, const int *results, int num_results)
{
    if (p->finished)
        return cv_error(CV_FAILED_PRECONDITION, "program already finished");
    p->results = malloc((size_t)(num_results > 0 ? num_results : 1) * sizeof(int));
    p->last_use = malloc((size_t)(p->num_values > 0 ? p->num_values : 1) * sizeof(int));
    if (!p->results || !p->last_use)
        return cv_error_nomem();
    for (int i = 0; i < num_results; i++) {
        if (results[i] < 0 || results[i] >= p->num_values)
            return cv_error(CV_INVALID_ARGUMENT, "result %d refers to value %d of %d", i, results[i],
                            p->num_values);
        p->results[i] = results[i];
    }
    p->num_results = num_results;
    for (int n = 0; n < p->num_nodes; n++)
        if (p->nodes[n].num_inputs > p->max_inputs)
            p->max_inputs = p->nodes[n].num_inputs;
    for (int v = 0; v < p->num_values; v++)
        p->last_use[v] = -1;
    for (int n = 0; n < p->num_nodes; n++)
        for (int i = 0; i < p->nodes[n].num_inputs; i++)
            p->last_use[p->nodes[n].inputs[i]] = n;
    for (int v = 0; v < p->num_values; v++)
        if (p->last_use[v] < 0)
            p->last_use[v] = p->num_nodes;
    for (int i = 0; i < num_results; i++)
        p->last_use[results[i]] = p->num_nodes;
    for (int n = 0; n < p->num_nodes; n++)
        p->nodes[n].result_of = sole_result(p, n, results, num_results);
    /* Epilogues: a node whose op takes them, followed by nodes whose op says
     * (as_epilogue) it amounts to one with its constant second input
     * (Elementwise + - * / of a float32 scalar or per-channel vector), each
     * the only user of the value before it: the first node applies them in
     * order as it writes (x - mean then / stddev after a resize), with the
     * same arithmetic. */
    for (int n = 0; n + 1 < p->num_nodes; n++) {
        Node *a = &p->nodes[n];
        if (!a->op->takes_epilogue || a->folded || a->num_outputs != 1)
            continue;
        int v = a->first_output;
        while (a->num_epilogues < CV_MAX_EPILOGUES && n + 1 + a->num_epilogues < p->num_nodes) {
            Node *b = &p->nodes[n + 1 + a->num_epilogues];
            int c = b->num_inputs == 2 ? b->inputs[1] : -1;
            bool constant = c >= p->num_args && c < p->num_args + p->num_constants;
            if (!b->op->as_epilogue || b->num_outputs != 1 || b->inputs[0] != v || !constant ||
                p->last_use[v] != n + 1 + a->num_epilogues ||
                !b->op->as_epilogue(&b->attrs, &p->constants[c - p->num_args],
                                    &a->epilogue[a->num_epilogues]))
                break;
            a->num_epilogues++;
            b->folded = true;
            v = b->first_output;
        }
    }
    p->finished = true;
    return CV_STATUS_OK;
}

CvProgram *cv_program_ref(CvProgram *p)
{
    atomic_fetch_add_explicit(&p->refcount, 1, memory_order_relaxed);
    return p;
}

void cv_program_unref(CvProgram *p)
{
    if (!p || atomic_fetch_sub_explicit(&p->refcount, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; i < p->num_constants; i++)
        cv_tensor_clear(&p->constants[i]);
    for (int n = 0; n < p->num_nodes; n++) {
        free(p->nodes[n].inputs);
        cv_op_attrs_clear(&p->nodes[n].attrs);
    }
    free(p->constants);
    free(p->nodes);
    free(p->results);
    free(p->last_use);
    free(p->name);
    free(p);
}

/* -- running ------------------------------------------------------------- */

static CvStatus run_op(const CvOp *op, const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                       CvTensor *out, int num_out, CvOpContext *ctx)
{
    memset(out, 0, (size_t)num_out * sizeof(*out));
    CvStatus s = op->run(attrs, in, num_in, out, num_out, ctx);
    if (s)
        for (int i = 0; i < num_out; i++)
            cv_tensor_clear(&out[i]);
    return s;
}

/* Where the bytes node `n` failed on came from: the first value, among its
 * inputs and then their ancestors (breadth first, up to the element's
 * components), whose buffer carries an origin (a record reader's record, a
 * ReadFile's file). Values already dropped are looked through; dropped
 * components are read from `in`. Runs on the error path only. */
static bool failure_source(const CvProgram *p, int n, const CvTensor *values, const CvElement *in,
                           char *buf, size_t size)
{
    bool found = false;
    int *queue = malloc((size_t)p->num_values * sizeof(int));
    bool *seen = calloc((size_t)p->num_values, sizeof(bool));
    int head = 0, tail = 0;
    if (!queue || !seen)
        goto done;
    for (int i = 0; i < p->nodes[n].num_inputs; i++) {
        int v = p->nodes[n].inputs[i];
        if (!seen[v]) {
            seen[v] = true;
            queue[tail++] = v;
        }
    }
    while (head < tail && !found) {
        int v = queue[head++];
        const CvTensor *t = v < p->num_args && !values[v].buf ? &in->t[v] : &values[v];
        if (t->buf && cv_tensor_origin_str(t, buf, size)) {
            found = true;
            break;
        }
        for (int k = 0; k < n; k++) { /* the node that produced v, if any */
            const Node *node = &p->nodes[k];
            if (v < node->first_output || v >= node->first_output + node->num_outputs)
                continue;
            for (int i = 0; i < node->num_inputs; i++) {
                int u = node->inputs[i];
                if (!seen[u]) {
                    seen[u] = true;
                    queue[tail++] = u;
                }
            }
            break;
        }
    }
done:
    free(queue);
    free(seen);
    return found;
}

#define CV_PROGRAM_STACK_VALUES 64
#define CV_PROGRAM_STACK_INPUTS 16

CvStatus cv_program_run(const CvProgram *p, const CvElement *in, const CvElementId *id,
                        CvElement *out)
{
    return cv_program_run_into(p, in, id, NULL, out);
}

CvStatus cv_program_run_into(const CvProgram *p, const CvElement *in, const CvElementId *id,
                             const CvTensor *dests, CvElement *out)
{
    CvStatus s = CV_STATUS_OK;
    CvTensor stack_values[CV_PROGRAM_STACK_VALUES];
    CvTensor stack_inputs[CV_PROGRAM_STACK_INPUTS];
    CvTensor *values = stack_values, *args = stack_inputs;
    if (in->n != (uint32_t)p->num_args)
        return cv_error(CV_INVALID_ARGUMENT, "%s: expected %d components, got %u", p->name,
                        p->num_args, in->n);
    if (p->num_values > CV_PROGRAM_STACK_VALUES)
        values = malloc((size_t)p->num_values * sizeof(*values));
    if (p->max_inputs > CV_PROGRAM_STACK_INPUTS)
        args = malloc((size_t)p->max_inputs * sizeof(*args));
    if (!values || !args) {
        s = cv_error_nomem();
        goto cleanup;
    }
    memset(values, 0, (size_t)p->num_values * sizeof(*values));
    for (int i = 0; i < p->num_args; i++)
        cv_tensor_copy_ref(&values[i], &in->t[i]);
    for (int i = 0; i < p->num_constants; i++)
        cv_tensor_copy_ref(&values[p->num_args + i], &p->constants[i]);
    for (int n = 0; n < p->num_nodes && !s; n++) {
        const Node *node = &p->nodes[n];
        if (node->folded) { /* the node before wrote our output */
            values[node->first_output] = values[node->inputs[0]];
            values[node->inputs[0]] = (CvTensor){0};
            for (int i = 1; i < node->num_inputs; i++)
                if (p->last_use[node->inputs[i]] == n)
                    cv_tensor_clear(&values[node->inputs[i]]);
            continue;
        }
        /* With epilogues, the result (and dest) are the last folded node's. */
        int result_of = p->nodes[n + node->num_epilogues].result_of;
        /* Inputs are shallow copies (no new references): the values keep them. */
        for (int i = 0; i < node->num_inputs; i++)
            args[i] = values[node->inputs[i]];
        CvOpContext ctx = {.seed = {p->seed[0], p->seed[1]}, .op_seed = node->op_seed,
                           .node = n, .id = *id,
                           .dest = dests && result_of >= 0 ? &dests[result_of] : NULL,
                           .epilogue = node->num_epilogues ? node->epilogue : NULL,
                           .num_epilogues = node->num_epilogues};
        s = run_op(node->op, &node->attrs, args, node->num_inputs, &values[node->first_output],
                   node->num_outputs, &ctx);
        if (s) {
            char source[1200];
            bool known = failure_source(p, n, values, in, source, sizeof(source));
            s = cv_status_prefix(s, "%s (element %llu), in %s%s%s: ", p->name,
                                 (unsigned long long)id->index, node->op->name,
                                 known ? " on " : "", known ? source : "");
            break;
        }
        for (int i = 0; i < node->num_inputs; i++)
            if (p->last_use[node->inputs[i]] == n)
                cv_tensor_clear(&values[node->inputs[i]]);
    }
    if (!s && !(s = cv_element_init(out, (uint32_t)p->num_results)))
        for (int i = 0; i < p->num_results; i++)
            cv_tensor_copy_ref(&out->t[i], &values[p->results[i]]);
cleanup:
    if (values)
        for (int v = 0; v < p->num_values; v++)
            cv_tensor_clear(&values[v]);
    if (values != stack_values)
        free(values);
    if (args != stack_inputs)
        free(args);
    return s;
}

static CvStatus program_call(void *ctx, const CvElement *in, const CvElementId *id, CvElement *out)
{
    return cv_program_run(ctx, in, id, out);
}

static CvStatus program_call_into(void *ctx, const CvElement *in, const CvElementId *id,
                                  const CvTensor *dests, CvElement *out)
{
    return cv_program_run_into(ctx, in, id, dests, out);
}

static void program_release(void *ctx)
{
    cv_program_unref(ctx);
}

/* The arguments read as files by an op that opens its input 0 (see
 * CvFunction.opens_args): the program is straight-line, so every run does. */
static uint64_t opened_args(const CvProgram *p)
{
    uint64_t mask = 0;
    for (int n = 0; n < p->num_nodes; n++) {
        const Node *node = &p->nodes[n];
        int v = node->num_inputs > 0 ? node->inputs[0] : -1;
        if (node->op->opens_input0 && v >= 0 && v < p->num_args && v < 64)
            mask |= (uint64_t)1 << v;
    }
    return mask;
}

CvFunction cv_program_function(CvProgram *p)
{
    return (CvFunction){.call = program_call, .release = program_release, .ctx = cv_program_ref(p),
                        .call_into = program_call_into, .opens_args = opened_args(p)};
}

CvStatus cv_op_run_eager(const CvOp *op, const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                         CvTensor *out, int num_out, const uint64_t seed[2], int64_t op_seed,
                         int node, const CvElementId *id)
{
    if (num_in < op->min_inputs || num_in > op->max_inputs)
        return cv_error(CV_INVALID_ARGUMENT, "%s takes %d to %d inputs, got %d", op->name,
                        op->min_inputs, op->max_inputs, num_in);
    CvOpContext ctx = {.seed = {seed[0], seed[1]}, .op_seed = op_seed, .node = node, .id = *id};
    CvStatus s = run_op(op, attrs, in, num_in, out, num_out, &ctx);
    return s ? cv_status_prefix(s, "%s: ", op->name) : CV_STATUS_OK;
}
