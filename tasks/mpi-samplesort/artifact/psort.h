/*
 * psort.h -- parallel sorting by regular sampling (PSRS) with MPI
 *
 * (c) 2008 Parallel Algorithms Group.  See README.
 */
#ifndef PSORT_H
#define PSORT_H

#include <stdio.h>
#include <stdint.h>
#include <mpi.h>

/* one record: 64-bit key plus where it came from (makes the order total,
   so that the output is unique even with many equal keys) */
typedef struct {
    uint64_t key;
    int32_t  rank;
    int32_t  idx;
} record_t;

/* process-wide state, set up in main() */
int my_rank, nprocs;
MPI_Datatype MPI_RECORD;
int verbose;

/* record.c */
void record_type_init(void);
int  record_cmp(const void *a, const void *b);
int  record_less(const record_t *a, const record_t *b);

/* gen.c */
int  gen_lookup(const char *name);
const char *gen_name(int d);
void gen_records(int dist, uint64_t seed, long n_global, record_t *r, long n_local);
#define NDIST 7

/* psrs.c */
record_t *psrs_sort(record_t *local, long n, int k, long *n_out);

/* check.c */
typedef struct {
    long     n_total;
    long     n_max, n_min;
    int      sorted;
    uint64_t checksum;
    uint64_t xorsum;
} result_t;
void check_result(record_t *r, long n, result_t *res);

#endif
