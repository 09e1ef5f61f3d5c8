/* CvProgram: a traced element function, compiled.
 *
 * The Python layer traces a map function once on symbolic placeholders and
 * hands the engine a straight-line program: values 0..num_args-1 are the
 * element's components, then the constants, then each node's outputs in
 * node order. Running it applies each node's op in order and returns the
 * result values as the output element. Values are dropped after their last
 * use, so a large intermediate (a decoded image) does not outlive its
 * consumer.
 *
 * A finished program is immutable and reference counted; any number of
 * threads may run it at once, without the GIL. Build it on one thread:
 * cv_program_new, then add constants and nodes, then cv_program_finish.
 */
#ifndef CV_PROGRAM_H
#define CV_PROGRAM_H

#include "core/dataset.h"
#include "ops/op.h"

typedef struct CvProgram CvProgram;

/* name: the function's name for messages (copied). seed: the function's
 * random seed pair (see CvOpContext). */
CvStatus cv_program_new(const char *name, int num_args, const uint64_t seed[2], CvProgram **out);
/* Adds a constant value (ownership of *value passes to the program, even on
 * failure; *value is cleared). */
CvStatus cv_program_add_constant(CvProgram *p, CvTensor *value);
/* Adds a node applying `op` to the values `inputs` (ids of earlier values);
 * its outputs become the next num_outputs values. *attrs passes to the
 * program, even on failure (it is cleared). */
CvStatus cv_program_add_node(CvProgram *p, const CvOp *op, CvOpAttrs *attrs, const int *inputs,
                             int num_inputs, int num_outputs, int64_t op_seed);
/* Sets the output element: the values `results` (any may repeat). */
CvStatus cv_program_finish(CvProgram *p, const int *results, int num_results);

CvProgram *cv_program_ref(CvProgram *p);
void cv_program_unref(CvProgram *p); /* NULL-safe; any thread */

/* Run on one element. `in` is borrowed; on OK *out is a new element. */
CvStatus cv_program_run(const CvProgram *p, const CvElement *in, const CvElementId *id,
                        CvElement *out);
/* The same, offering dests[k] (borrowed, one per result) as result k's
 * memory: an op producing a result that nothing else uses writes it there
 * when the dtype and shape match (CvOpContext.dest), and that result is then
 * a view of dests[k]. */
CvStatus cv_program_run_into(const CvProgram *p, const CvElement *in, const CvElementId *id,
                             const CvTensor *dests, CvElement *out);

/* A CvFunction running the program; it takes its own reference. */
CvFunction cv_program_function(CvProgram *p);

/* Run one op outside any program (eager mode): the same code path, so an op
 * called on arrays gives what it gives inside a traced map. `node` and `id`
 * key the random stream as they would in the traced program. */
CvStatus cv_op_run_eager(const CvOp *op, const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                         CvTensor *out, int num_out, const uint64_t seed[2], int64_t op_seed,
                         int node, const CvElementId *id);

#endif
