/* Engine objects handed to Python as handles (capsules), one table for all
 * kinds: a handle owns one reference to (or the only pointer of) its
 * object, freed when Python drops the handle, without the GIL where the
 * free may wait (a writer's close). The files of the kinds make and take
 * them; this file knows only how each is freed. */
#include "python/binding.h"

#include "core/ram_budget.h"
#include "io/fs_ops.h"
#include "io/record_writer.h"
#include "kernels/cache.h"
#include "ops/example.h"
#include "ops/program.h"
#include "ops/regex.h"

typedef struct HandleKind {
    const char *capsule; /* the capsule's name */
    const char *what;    /* for "expected ..., got ..." */
    void (*free)(void *object);
    bool unlocked; /* free without the GIL */
} HandleKind;

static void free_memory(void *m) { cv_memory_unref(m); }
static void free_example_config(void *c) { cv_example_config_free(c); }
static void free_record_writer(void *w) { cv_tfrecord_writer_free(w); }
static void free_cache_store(void *s) { cv_cache_store_unref(s); }
static void free_program(void *p) { cv_program_unref(p); }
static void free_regex(void *re) { cv_regex_free(re); }
static void free_fs_file(void *f) { cv_fs_file_free(f); }

static const HandleKind kinds[CV_NUM_HANDLES] = {
    [CV_HANDLE_MEMORY] = {"conveyor._engine.MemoryBudget", "a memory budget", free_memory, false},
    [CV_HANDLE_EXAMPLE_CONFIG] = {"conveyor._engine.ExampleConfig",
                                  "an Example configuration from example_config()",
                                  free_example_config, false},
    [CV_HANDLE_RECORD_WRITER] = {"conveyor._engine.TFRecordWriter", "a TFRecordWriter handle",
                                 free_record_writer, true},
    [CV_HANDLE_CACHE_STORE] = {"conveyor._engine.CacheStore", "a cache store", free_cache_store, false},
    [CV_HANDLE_PROGRAM] = {"conveyor._engine.Program", "a Program", free_program, false},
    [CV_HANDLE_REGEX] = {"conveyor._engine.Regex", "a compiled regex", free_regex, false},
    [CV_HANDLE_FS_FILE] = {"conveyor._engine.FsFile", "a file handle from fs_open()", free_fs_file,
                           true}, /* a writer's abort may be a request */
};

/* The capsule's context is its kind's row. */
static void handle_free(PyObject *capsule)
{
    const HandleKind *k = PyCapsule_GetContext(capsule);
    void *object = PyCapsule_GetPointer(capsule, k->capsule);
    if (k->unlocked)
        CV_UNLOCKED(k->free(object));
    else
        k->free(object);
}

PyObject *cv_handle_new(CvHandleKind kind, void *object)
{
    PyObject *capsule = PyCapsule_New(object, kinds[kind].capsule, handle_free);
    if (capsule && PyCapsule_SetContext(capsule, (void *)&kinds[kind]) == 0)
        return capsule;
    if (capsule) /* no context: its destructor must not run */
        PyCapsule_SetDestructor(capsule, NULL);
    Py_XDECREF(capsule);
    kinds[kind].free(object);
    return NULL;
}

void *cv_handle_arg(PyObject *obj, CvHandleKind kind)
{
    if (PyCapsule_IsValid(obj, kinds[kind].capsule))
        return PyCapsule_GetPointer(obj, kinds[kind].capsule);
    PyErr_Format(PyExc_TypeError, "expected %s, got %s", kinds[kind].what, Py_TYPE(obj)->tp_name);
    return NULL;
}

bool cv_handle_is(PyObject *obj, CvHandleKind kind)
{
    return PyCapsule_IsValid(obj, kinds[kind].capsule);
}
