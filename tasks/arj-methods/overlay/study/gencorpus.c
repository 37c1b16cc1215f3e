/*
 * gencorpus.c -- the synthetic corpus of the study (Section 3).
 *
 *   cc -O2 -o gencorpus gencorpus.c && ./gencorpus SEED OUTDIR
 *
 * Writes five files into OUTDIR:
 *   text.txt    pseudo-English: Zipf-distributed words, sentences, paragraphs
 *   source.c    C-like source: keywords, identifiers, indentation, comments
 *   table.bin   little-endian 32-bit samples of a random walk (sensor data)
 *   random.bin  uniformly random bytes
 *   server.log  log lines with timestamps, hosts, request paths and codes
 *
 * Everything comes from one xorshift64* stream per file, so the corpus is
 * byte-for-byte identical on every machine for a given SEED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long st;

static void seed(unsigned long long s, unsigned long long salt)
{
    int i;
    st = (s ^ (salt * 0x9E3779B97F4A7C15ULL)) | 1;
    for (i = 0; i < 20; i++) {
        st ^= st >> 12; st ^= st << 25; st ^= st >> 27;
    }
}

static unsigned long long next(void)
{
    st ^= st >> 12; st ^= st << 25; st ^= st >> 27;
    return st * 0x2545F4914F6CDD1DULL;
}

static unsigned rnd(unsigned n)
{
    return (unsigned) ((next() >> 33) % n);
}

/* Zipf over n ranks with exponent 1, by inversion of a precomputed table
   (integer arithmetic only, so that no libm differences can creep in) */
static unsigned long long *ztab;
static unsigned zn;

static void zipf_init(unsigned n)
{
    unsigned i;
    unsigned long long acc = 0;
    ztab = malloc(n * sizeof *ztab);
    zn = n;
    for (i = 0; i < n; i++) {
        acc += 1000000000ULL / (i + 1);
        ztab[i] = acc;
    }
}

static unsigned zipf(void)
{
    unsigned long long u = (next() >> 11) % ztab[zn - 1];
    unsigned lo = 0, hi = zn - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (ztab[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static const char *syl[] = {
    "ta", "re", "mi", "so", "la", "ne", "ko", "ri", "an", "el", "or", "us",
    "ing", "er", "th", "st", "con", "pro", "ment", "tion", "al", "ly", "com", "de"
};
#define NSYL (sizeof syl / sizeof syl[0])

static char words[4000][24];

static void make_words(void)
{
    unsigned i, j, n;
    for (i = 0; i < 4000; i++) {
        words[i][0] = 0;
        n = 1 + (i < 60 ? 0 : i < 600 ? 1 : 2) + rnd(2);
        for (j = 0; j < n; j++)
            strcat(words[i], syl[rnd(NSYL)]);
    }
}

static void gen_text(FILE *f, long size)
{
    long out = 0;
    int inword = 0, sent = 0;
    while (out < size) {
        const char *w = words[zipf()];
        char buf[32];
        strcpy(buf, w);
        if (sent == 0)
            buf[0] = (char) (buf[0] - 'a' + 'A');
        out += fprintf(f, "%s%s", inword ? " " : "", buf);
        inword = 1;
        if (++sent > 6 + (int) rnd(14)) {
            out += fprintf(f, rnd(8) ? "." : "?");
            sent = 0;
            if (rnd(7) == 0) {
                out += fprintf(f, "\n\n");
                inword = 0;
            }
        } else if (rnd(12) == 0) {
            out += fprintf(f, ",");
        }
    }
    fputc('\n', f);
}

static const char *kw[] = {
    "int", "char", "unsigned", "long", "static", "const", "struct", "return",
    "if", "else", "while", "for", "break", "void", "sizeof", "NULL"
};

static void gen_source(FILE *f, long size)
{
    long out = 0;
    int depth = 0, fn = 0;
    while (out < size) {
        int i, n = rnd(10);
        if (depth == 0) {
            out += fprintf(f, "\n/* %s %s %s */\nstatic %s %s_%s%d(%s *%s, %s %s)\n{\n",
                           words[zipf()], words[zipf()], words[zipf()],
                           kw[rnd(4)], words[rnd(300)], words[rnd(300)], fn++,
                           kw[1 + rnd(3)], words[rnd(100)], kw[rnd(4)], words[rnd(100)]);
            depth = 1;
            continue;
        }
        for (i = 0; i < depth; i++)
            out += fprintf(f, "    ");
        if (n < 2 && depth < 4) {
            out += fprintf(f, "%s (%s_%s %s %u) {\n", kw[8 + rnd(4)], words[rnd(200)],
                           words[rnd(200)], rnd(2) ? "<" : "==", rnd(256));
            depth++;
        } else if (n < 4 && depth > 1) {
            out += fprintf(f, "}\n");
            depth--;
        } else if (n < 5 && depth == 1 && rnd(3) == 0) {
            out += fprintf(f, "return %s;\n}\n", words[rnd(200)]);
            depth = 0;
        } else {
            out += fprintf(f, "%s_%s = %s(%s, %u);\n", words[rnd(200)], words[rnd(50)],
                           words[zipf() % 300], words[rnd(200)], rnd(1000));
        }
    }
    while (depth-- > 0)
        fprintf(f, "}\n");
}

static void gen_table(FILE *f, long size)
{
    long i;
    long v = 100000, d = 0;
    for (i = 0; i < size / 4; i++) {
        unsigned char b[4];
        unsigned long u;
        d += (long) rnd(21) - 10;
        if (d > 40) d = 40;
        if (d < -40) d = -40;
        v += d;
        u = (unsigned long) v;
        b[0] = u & 0xff; b[1] = (u >> 8) & 0xff; b[2] = (u >> 16) & 0xff; b[3] = (u >> 24) & 0xff;
        fwrite(b, 1, 4, f);
    }
}

static void gen_random(FILE *f, long size)
{
    long i;
    for (i = 0; i < size; i++)
        fputc((int) (next() >> 56), f);
}

static void gen_log(FILE *f, long size)
{
    static const char *meth[] = { "GET", "GET", "GET", "POST", "HEAD" };
    static const int code[] = { 200, 200, 200, 200, 304, 404, 500 };
    long out = 0, t = 1104537600L; /* 2005-01-01 */
    unsigned long req = 1;
    while (out < size) {
        t += rnd(3);
        out += fprintf(f, "%ld host%02u.cluster.example.org httpd[%u]: %s /%s/%s.html %d %u req=%lu\n",
                       t, rnd(24), 2000 + rnd(16), meth[rnd(5)], words[zipf() % 80],
                       words[zipf() % 500], code[rnd(7)], 200 + rnd(30000), req++);
    }
}

static FILE *open_out(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

int main(int argc, char **argv)
{
    unsigned long long s;
    FILE *f;
    if (argc != 3) {
        fprintf(stderr, "usage: gencorpus SEED OUTDIR\n");
        return 2;
    }
    s = strtoull(argv[1], NULL, 10);
    seed(s, 0);
    zipf_init(4000);
    make_words();

    seed(s, 1); f = open_out(argv[2], "text.txt");   gen_text(f, 1000000);  fclose(f);
    seed(s, 2); f = open_out(argv[2], "source.c");   gen_source(f, 600000); fclose(f);
    seed(s, 3); f = open_out(argv[2], "table.bin");  gen_table(f, 400000);  fclose(f);
    seed(s, 4); f = open_out(argv[2], "random.bin"); gen_random(f, 200000); fclose(f);
    seed(s, 5); f = open_out(argv[2], "server.log"); gen_log(f, 1000000);   fclose(f);
    return 0;
}
