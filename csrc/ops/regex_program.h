/* The compiled form of a regex: the program the compiler (regex.c) builds
 * and the matcher (regex_match.c) runs; both include this, it includes
 * neither's interface. Not an op.
 *
 * A program is a list of Pike VM instructions: CHAR (a code point), CLASS
 * (an index into `classes`), ANY / ANYNL (any character / but newline),
 * SPLIT x, y (try x, then y), JMP x, SAVE slot (record the position),
 * ASSERT kind (an empty-width test) and MATCH. Immutable once built. */
#ifndef CV_REGEX_PROGRAM_H
#define CV_REGEX_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>


#define MAX_RUNE 0x10FFFF

enum { A_BEGIN_TEXT, A_END_TEXT, A_BEGIN_LINE, A_END_LINE, A_WORD, A_NOT_WORD };
enum { I_CHAR, I_CLASS, I_ANY, I_ANYNL, I_SPLIT, I_JMP, I_SAVE, I_ASSERT, I_MATCH };

typedef struct {
    int32_t lo, hi;
} Range;

typedef struct {
    uint64_t ascii[2]; /* bit c: code point c < 128 is in the class */
    Range *r;          /* sorted, disjoint ranges of code points >= 128 */
    int n;
} Class;

typedef struct {
    uint8_t op;
    int32_t x, y;
} Inst;

struct CvRegex {
    Inst *prog;
    int ninst;
    Class *classes;
    int nclasses;
    int groups;
};

#endif
