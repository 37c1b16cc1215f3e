/*
 * psort -- parallel sorting by regular sampling, driver.
 *
 *   mpirun -np P ./psort [-n N] [-d DIST|all] [-k K] [-s SEED] [-o FILE] [-v]
 *
 * Sorts N 16-byte records (N/P per process) drawn from DIST and prints one
 * line per distribution:
 *
 *   dist,n,p,k,sorted,imbalance,checksum,xorsum,time_s
 *
 * K is the number of regular samples per process (default: P, as in the
 * original PSRS; more samples = oversampling).  imbalance = largest output
 * piece / (N/P).  checksum and xorsum identify the sorted sequence (see
 * check.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "psort.h"

static void usage(void)
{
    if (my_rank == 0)
        fprintf(stderr, "usage: psort [-n N] [-d DIST|all] [-k K] [-s SEED] [-o FILE] [-v]\n");
    MPI_Finalize();
    exit(2);
}

static void run(int dist, long n_global, int k, uint64_t seed, FILE *out)
{
    long n_local = n_global / nprocs, n_out;
    record_t *r;
    result_t res;
    double t0, t1;

    if ((long) my_rank < n_global % nprocs)
        n_local++;
    r = malloc((n_local ? n_local : 1) * sizeof(record_t));
    if (r == NULL) {
        fprintf(stderr, "psort[%d]: out of memory\n", my_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    gen_records(dist, seed, n_global, r, n_local);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    r = psrs_sort(r, n_local, k, &n_out);
    MPI_Barrier(MPI_COMM_WORLD);
    t1 = MPI_Wtime();

    check_result(r, n_out, &res);
    if (my_rank == 0) {
        fprintf(out, "%s,%ld,%d,%d,%s,%.4f,%016llx,%016llx,%.3f\n",
                gen_name(dist), res.n_total, nprocs, k, res.sorted ? "yes" : "NO",
                (double) res.n_max / ((double) n_global / nprocs),
                (unsigned long long) res.checksum, (unsigned long long) res.xorsum,
                t1 - t0);
        fflush(out);
    }
    if (verbose && my_rank == 0)
        fprintf(stderr, "psort: %s done, pieces %ld..%ld\n", gen_name(dist), res.n_min, res.n_max);
    free(r);
}

int main(int argc, char **argv)
{
    long n = 1L << 20;
    uint64_t seed = 1;
    const char *dname = "all", *oname = NULL;
    FILE *out = stdout;
    int c, d, k = 0;

    MPI_Init(&argc, &argv);
    MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    record_type_init();

    while ((c = getopt(argc, argv, "n:d:k:s:o:vh")) != -1) {
        switch (c) {
        case 'n': n = atol(optarg); break;
        case 'd': dname = optarg; break;
        case 'k': k = atoi(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': oname = optarg; break;
        case 'v': verbose = 1; break;
        default: usage();
        }
    }
    if (k <= 0)
        k = nprocs;
    if (n < (long) nprocs * k)
        usage();
    if (strcmp(dname, "all") != 0 && gen_lookup(dname) < 0) {
        if (my_rank == 0)
            fprintf(stderr, "psort: unknown distribution %s\n", dname);
        usage();
    }
    if (my_rank == 0 && oname != NULL) {
        out = fopen(oname, "w");
        if (out == NULL) {
            perror(oname);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (my_rank == 0)
        fprintf(out, "dist,n,p,k,sorted,imbalance,checksum,xorsum,time_s\n");

    for (d = 0; d < NDIST; d++)
        if (strcmp(dname, "all") == 0 || d == gen_lookup(dname))
            run(d, n, k, seed, out);

    if (my_rank == 0 && out != stdout)
        fclose(out);
    MPI_Type_free(&MPI_RECORD);
    MPI_Finalize();
    return 0;
}
