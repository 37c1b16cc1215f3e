/*
 * psrs.c -- parallel sorting by regular sampling (Shi & Schaeffer 1992,
 * Li et al. 1993):
 *
 *   1. sort locally
 *   2. take k regular samples per process (k = p in the original
 *      algorithm; larger k = oversampling), gather them on rank 0
 *   3. rank 0 sorts the p*k samples and picks p-1 pivots, broadcast
 *   4. partition the local data by the pivots, all-to-all exchange
 *   5. sort (p-way merge) the received pieces
 */
#include <stdlib.h>
#include <string.h>
#include "psort.h"

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "psort[%d]: out of memory (%lu bytes)\n", my_rank, (unsigned long) n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* first index i in a[0..n) with !(a[i] < x), i.e. lower bound */
static long lower_bound(const record_t *a, long n, const record_t *x)
{
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (record_less(&a[mid], x))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

record_t *psrs_sort(record_t *local, long n, int k, long *n_out)
{
    int p = nprocs, i;
    record_t *samples, *all = NULL, *pivots, *recv;
    int *scount, *sdispl, *rcount, *rdispl;
    long *bound;
    long total;

    /* 1 */
    qsort(local, n, sizeof(record_t), record_cmp);
    if (p == 1) {
        *n_out = n;
        return local;
    }

    /* 2: samples at positions i*n/k, i = 0..k-1 */
    samples = xmalloc(k * sizeof(record_t));
    for (i = 0; i < k; i++)
        samples[i] = local[(long) i * n / k];
    if (my_rank == 0)
        all = xmalloc((size_t) p * k * sizeof(record_t));
    MPI_Gather(samples, k, MPI_RECORD, all, k, MPI_RECORD, 0, MPI_COMM_WORLD);

    /* 3: pivots are samples k + p/2 - 1, 2k + p/2 - 1, ... */
    pivots = xmalloc((p - 1) * sizeof(record_t));
    if (my_rank == 0) {
        qsort(all, (size_t) p * k, sizeof(record_t), record_cmp);
        for (i = 1; i < p; i++)
            pivots[i - 1] = all[i * k + p / 2 - 1];
        free(all);
    }
    MPI_Bcast(pivots, p - 1, MPI_RECORD, 0, MPI_COMM_WORLD);

    /* 4 */
    bound = xmalloc((p + 1) * sizeof(long));
    bound[0] = 0;
    for (i = 1; i < p; i++)
        bound[i] = lower_bound(local, n, &pivots[i - 1]);
    bound[p] = n;

    scount = xmalloc(p * sizeof(int));
    sdispl = xmalloc(p * sizeof(int));
    rcount = xmalloc(p * sizeof(int));
    rdispl = xmalloc(p * sizeof(int));
    for (i = 0; i < p; i++) {
        scount[i] = (int) (bound[i + 1] - bound[i]);
        sdispl[i] = (int) bound[i];
    }
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    total = 0;
    for (i = 0; i < p; i++) {
        rdispl[i] = (int) total;
        total += rcount[i];
    }
    recv = xmalloc(total * sizeof(record_t));
    MPI_Alltoallv(local, scount, sdispl, MPI_RECORD,
                  recv, rcount, rdispl, MPI_RECORD, MPI_COMM_WORLD);

    /* 5: the pieces are sorted runs; qsort is fast enough for p <= 64 */
    qsort(recv, total, sizeof(record_t), record_cmp);

    free(samples);
    free(pivots);
    free(bound);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    free(local);
    *n_out = total;
    return recv;
}
