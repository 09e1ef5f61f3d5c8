/* Binding of the tf.train.Example parser. */
#include "python/binding.h"

PyMethodDef cv_example_functions[] = {
    {NULL, NULL, 0, NULL},
};
