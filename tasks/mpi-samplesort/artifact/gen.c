/*
 * gen.c -- input distributions of Helman, Bader and JaJa, "A randomized
 * parallel sorting algorithm with an experimental study" (JPDC 1998),
 * adapted to 64-bit keys.  Every process generates its own share from its
 * own stream; the global input depends only on (dist, seed, N, p).
 */
#include <string.h>
#include "psort.h"

static const char *names[NDIST] = {
    "uniform", "gaussian", "zero", "bucket", "g-group", "staggered", "dupl"
};

int gen_lookup(const char *name)
{
    int d;
    for (d = 0; d < NDIST; d++)
        if (strcmp(name, names[d]) == 0)
            return d;
    return -1;
}

const char *gen_name(int d)
{
    return names[d];
}

/* xorshift64* (Vigna) */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    int i;
    rng_state = s * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    if (rng_state == 0)
        rng_state = 1;
    for (i = 0; i < 16; i++) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
    }
}

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

#define KEYBITS 62
#define KEYMAX  (1ULL << KEYBITS)

void gen_records(int dist, uint64_t seed, long n_global, record_t *r, long n_local)
{
    long i;
    uint64_t p = (uint64_t) nprocs, me = (uint64_t) my_rank;
    uint64_t span = KEYMAX / p;     /* key range of one "bucket" */
    long per = n_local / nprocs;     /* records per bucket/group on a process */

    (void) n_global;
    if (per == 0)
        per = 1;
    rng_seed(seed + 1000003ULL * me);

    for (i = 0; i < n_local; i++) {
        uint64_t k = 0, u = rng_next() >> (64 - KEYBITS);
        long blk = i / per;
        if (blk >= nprocs)
            blk = nprocs - 1;
        switch (dist) {
        case 0: /* uniform */
            k = u;
            break;
        case 1: /* gaussian: mean of four uniforms */
            k = (u >> 2) + (rng_next() >> (66 - KEYBITS)) + (rng_next() >> (66 - KEYBITS))
                + (rng_next() >> (66 - KEYBITS));
            break;
        case 2: /* zero: all keys equal */
            k = 42;
            break;
        case 3: /* bucket sorted: the j-th block of every process is uniform in the j-th range */
            k = (uint64_t) blk * span + u % span;
            break;
        case 4: { /* g-group, g = 2 (p >= 2) */
            uint64_t g = p < 2 ? 1 : 2, grp = me / g;
            uint64_t j = ((grp * g + p / 2) + (uint64_t) blk) % p;
            k = j * span + u % span;
            break;
        }
        case 5: { /* staggered */
            uint64_t j = me < p / 2 ? 2 * me + 1 : 2 * (me - p / 2);
            (void) blk;
            k = j * span + u % span;
            break;
        }
        case 6: /* deterministic duplicates: log N distinct values */
            k = (uint64_t) (i % 23) * 1000 + (me % 3);
            break;
        }
        r[i].key = k;
        r[i].rank = my_rank;
        r[i].idx = (int32_t) i;
    }
}
