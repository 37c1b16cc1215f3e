/* Counts the primes up to x with a segmented sieve of Eratosthenes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEGMENT 32768

static long count_primes(long x)
{
    if (x < 2)
        return 0;
    long root = 1;
    while ((root + 1) * (root + 1) <= x)
        root++;
    char *small = calloc(root + 1, 1);
    long *base = malloc(sizeof(long) * (root + 1));
    long nbase = 0;
    for (long i = 2; i <= root; i++) {
        if (small[i])
            continue;
        base[nbase++] = i;
        for (long j = i * i; j <= root; j += i)
            small[j] = 1;
    }
    char segment[SEGMENT];
    long count = 0;
    for (long low = 2; low <= x; low += SEGMENT) {
        long high = low + SEGMENT - 1 < x ? low + SEGMENT - 1 : x;
        memset(segment, 0, sizeof segment);
        for (long k = 0; k < nbase; k++) {
            long p = base[k];
            long start = (low + p - 1) / p * p;
            if (start < p * p)
                start = p * p;
            for (long j = start; j <= high; j += p)
                segment[j - low] = 1;
        }
        for (long n = low; n <= high; n++)
            count += !segment[n - low];
    }
    free(small);
    free(base);
    return count;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s X\n", argv[0]);
        return 2;
    }
    long x = atol(argv[1]);
    printf("%ld,%ld\n", x, count_primes(x));
    return 0;
}
