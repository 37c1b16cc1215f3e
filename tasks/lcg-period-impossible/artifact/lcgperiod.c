/* The period of x' = (a x + c) mod m from a seed, by Brent's method. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long long step(unsigned long long x, unsigned long long m, unsigned long long a,
                               unsigned long long c)
{
    return (a * x + c) % m;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s M A C SEED\n", argv[0]);
        return 2;
    }
    unsigned long long m = strtoull(argv[1], 0, 10), a = strtoull(argv[2], 0, 10);
    unsigned long long c = strtoull(argv[3], 0, 10), seed = strtoull(argv[4], 0, 10);
    if (m == 0 || m > (1ULL << 31)) {
        fprintf(stderr, "m must be in 1..2^31\n");
        return 2;
    }
    /* Brent: the period is the first power-of-two window in which the
       hare meets the tortoise again. */
    unsigned long long power = 1, period = 1;
    unsigned long long tortoise = seed % m, hare = step(tortoise, m, a, c);
    while (tortoise != hare) {
        if (power == period) {
            tortoise = hare;
            power *= 2;
            period = 0;
        }
        hare = step(hare, m, a, c);
        period++;
    }
    printf("%llu,%llu,%llu,%llu,%llu\n", m, a, c, seed, period);
    return 0;
}
