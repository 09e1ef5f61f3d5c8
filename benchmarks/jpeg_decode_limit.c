/* The machine's JPEG decode limit: libjpeg-turbo alone, no framework.
 *
 * Usage: jpeg_decode_limit SECONDS THREADS FILE...
 *
 * Loads the files into memory, then THREADS threads each decode them in
 * turn (each thread starts at a different file) for SECONDS, with
 * TensorFlow's decode_jpeg defaults: RGB output, fancy upsampling, the fast
 * integer IDCT (JDCT_IFAST), straight into one output buffer per thread.
 * Prints one line: "images <n> seconds <s> images_per_s <r> threads <t>".
 * Built by benchmarks/images.py with: gcc -O2 -pthread ... -ljpeg
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

typedef struct {
    unsigned char *data;
    unsigned long size;
} File;

static File *files;
static int num_files;
static double seconds;

typedef struct {
    int first;
    long images;
    double elapsed;
} Worker;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int decode(struct jpeg_decompress_struct *ci, const File *f, unsigned char **buf,
                  size_t *cap)
{
    jpeg_mem_src(ci, f->data, f->size);
    if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK)
        return -1;
    ci->out_color_space = JCS_RGB;
    ci->do_fancy_upsampling = TRUE;
    ci->dct_method = JDCT_IFAST;
    jpeg_start_decompress(ci);
    size_t stride = (size_t)ci->output_width * 3, need = stride * ci->output_height;
    if (need > *cap) {
        free(*buf);
        *buf = malloc(need);
        *cap = need;
        if (!*buf)
            return -1;
    }
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW rows[16];
        int n = 0;
        for (; n < 16 && ci->output_scanline + n < ci->output_height; n++)
            rows[n] = *buf + (size_t)(ci->output_scanline + n) * stride;
        jpeg_read_scanlines(ci, rows, n);
    }
    jpeg_finish_decompress(ci);
    return 0;
}

static void *run(void *arg)
{
    Worker *w = arg;
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr err;
    ci.err = jpeg_std_error(&err); /* the files are valid: default errors are fine */
    jpeg_create_decompress(&ci);
    unsigned char *buf = NULL;
    size_t cap = 0;
    double start = now(), t = start;
    for (long i = w->first; t - start < seconds; i++) {
        if (decode(&ci, &files[i % num_files], &buf, &cap) < 0) {
            fprintf(stderr, "decode failed\n");
            exit(1);
        }
        w->images++;
        if ((w->images & 7) == 0)
            t = now();
    }
    w->elapsed = now() - start;
    jpeg_destroy_decompress(&ci);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SECONDS THREADS FILE...\n", argv[0]);
        return 2;
    }
    seconds = atof(argv[1]);
    int threads = atoi(argv[2]);
    num_files = argc - 3;
    files = calloc((size_t)num_files, sizeof(File));
    for (int i = 0; i < num_files; i++) {
        FILE *fp = fopen(argv[3 + i], "rb");
        if (!fp) {
            perror(argv[3 + i]);
            return 1;
        }
        fseek(fp, 0, SEEK_END);
        files[i].size = (unsigned long)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        files[i].data = malloc(files[i].size);
        if (fread(files[i].data, 1, files[i].size, fp) != files[i].size) {
            perror(argv[3 + i]);
            return 1;
        }
        fclose(fp);
    }
    pthread_t tids[256];
    Worker workers[256];
    if (threads < 1 || threads > 256)
        return 2;
    for (int i = 0; i < threads; i++) {
        workers[i] = (Worker){.first = i * num_files / threads};
        pthread_create(&tids[i], NULL, run, &workers[i]);
    }
    long images = 0;
    double elapsed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        images += workers[i].images;
        if (workers[i].elapsed > elapsed)
            elapsed = workers[i].elapsed;
    }
    printf("images %ld seconds %.4f images_per_s %.2f threads %d\n", images, elapsed,
           (double)images / elapsed, threads);
    return 0;
}
