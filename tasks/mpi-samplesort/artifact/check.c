/*
 * check.c -- is the output globally sorted, how balanced is it, and a
 * checksum of the sorted sequence that does not depend on how it is split
 * among the processes.
 */
#include <string.h>
#include "psort.h"

/* a 64-bit mixer (MurmurHash3 finaliser) */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

void check_result(record_t *r, long n, result_t *res)
{
    long i, offset = 0, nn = n;
    int ok = 1, all_ok;
    uint64_t sum = 0, xs = 0;
    record_t last, prev_last;
    MPI_Status st;
    int has = n > 0, prev_has = 0;

    /* locally sorted? */
    for (i = 1; i < n; i++)
        if (record_less(&r[i], &r[i - 1])) {
            ok = 0;
            break;
        }

    /* boundary with the previous process (empty pieces pass it on) */
    memset(&last, 0, sizeof last);
    memset(&prev_last, 0, sizeof prev_last);
    if (has)
        last = r[n - 1];
    if (my_rank > 0) {
        MPI_Recv(&prev_has, 1, MPI_INT, my_rank - 1, 1, MPI_COMM_WORLD, &st);
        MPI_Recv(&prev_last, 1, MPI_RECORD, my_rank - 1, 2, MPI_COMM_WORLD, &st);
        if (prev_has && has && record_less(&r[0], &prev_last))
            ok = 0;
        if (!has) {
            has = prev_has;
            last = prev_last;
        }
    }
    if (my_rank < nprocs - 1) {
        MPI_Send(&has, 1, MPI_INT, my_rank + 1, 1, MPI_COMM_WORLD);
        MPI_Send(&last, 1, MPI_RECORD, my_rank + 1, 2, MPI_COMM_WORLD);
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    /* global position of my first record */
    MPI_Exscan(&nn, &offset, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (my_rank == 0)
        offset = 0;

    for (i = 0; i < n; i++) {
        uint64_t h = mix(r[i].key ^ mix(((uint64_t) (uint32_t) r[i].rank << 32) | (uint32_t) r[i].idx));
        sum += h * (uint64_t) (offset + i + 1);
        xs ^= mix(h + (uint64_t) (offset + i));
    }

    res->sorted = all_ok;
    MPI_Allreduce(&sum, &res->checksum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&xs, &res->xorsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, MPI_COMM_WORLD);
    MPI_Allreduce(&nn, &res->n_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&nn, &res->n_max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&nn, &res->n_min, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
}
