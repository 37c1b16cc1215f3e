/*
 * SPECPOIS -- convergence study of Fourier spectral vs. finite-difference
 * solvers for the periodic Poisson and heat equations.
 *
 *   specpois  parfile  outprefix
 *
 * writes  <outprefix>_poisson.csv   N, h, err_spectral, err_fd2, rate_fd2
 *         <outprefix>_heat.csv      dt, steps, err_be, err_cn, rate_be, rate_cn
 *
 * Errors are max-norm errors of the zero-mean solution.
 *
 * (c) 2004  -- written for the P4 cluster, FFTW 3.0.1
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "specpois.h"

static double *uex, *utmp;

int
main(argc, argv)
int argc;
char **argv;
{
    int k, n, nsteps;
    double errs, errf, errf_old = 0.0, h, h_old = 0.0, dt;
    double errb, errc, errb_old = 0.0, errc_old = 0.0, dt_old = 0.0;
    char fname[512];
    FILE *fp;

    if (argc != 3) {
        fprintf(stderr, "usage: specpois parfile outprefix\n");
        return 2;
    }
    if (readpar(argv[1]) != 0) return 1;

    /* ---------------- Table 1: Poisson ---------------- */
    sprintf(fname, "%s_poisson.csv", argv[2]);
    if ((fp = fopen(fname, "w")) == NULL) {
        fprintf(stderr, "specpois: cannot write %s\n", fname);
        return 1;
    }
    fprintf(fp, "N,h,err_spectral,err_fd2,rate_fd2\n");
    for (k = 0; k < nn; k++) {
        n = nlist[k];
        alloc_grid(n);
        uex  = (double *) malloc(sizeof(double) * n * n);
        exact_u(uex);
        h = Lbox / n;

        rhs_f(rwork);
        solve_poisson(0);
        errs = maxdiff(rwork, uex, n*n);

        rhs_f(rwork);
        solve_poisson(1);
        errf = maxdiff(rwork, uex, n*n);

        if (k == 0)
            fprintf(fp, "%d,%.10e,%.10e,%.10e,\n", n, h, errs, errf);
        else
            fprintf(fp, "%d,%.10e,%.10e,%.10e,%.6f\n", n, h, errs, errf,
                    log(errf_old/errf)/log(h_old/h));
        if (verbose)
            printf("poisson N=%4d  spectral %.3e  fd2 %.3e\n", n, errs, errf);
        errf_old = errf; h_old = h;
        free(uex);
        free_grid();
    }
    fclose(fp);
    printf("wrote %s\n", fname);

    /* ---------------- Table 2: heat equation ---------------- */
    sprintf(fname, "%s_heat.csv", argv[2]);
    if ((fp = fopen(fname, "w")) == NULL) {
        fprintf(stderr, "specpois: cannot write %s\n", fname);
        return 1;
    }
    fprintf(fp, "dt,steps,err_be,err_cn,rate_be,rate_cn\n");
    alloc_grid(nheat);
    uex  = (double *) malloc(sizeof(double) * nheat * nheat);
    utmp = (double *) malloc(sizeof(double) * nheat * nheat);
    for (k = 0; k < ndt; k++) {
        dt = dtlist[k];
        nsteps = (int) floor(tend/dt + 0.5);
        heat_run(0, dt, nsteps);
        memcpy(uex, rwork, sizeof(double) * nheat * nheat);
        heat_run(1, dt, nsteps);
        errb = maxdiff(rwork, uex, nheat*nheat);
        heat_run(2, dt, nsteps);
        errc = maxdiff(rwork, uex, nheat*nheat);
        if (k == 0)
            fprintf(fp, "%.6g,%d,%.10e,%.10e,,\n", dt, nsteps, errb, errc);
        else
            fprintf(fp, "%.6g,%d,%.10e,%.10e,%.6f,%.6f\n", dt, nsteps, errb, errc,
                    log(errb_old/errb)/log(dt_old/dt),
                    log(errc_old/errc)/log(dt_old/dt));
        if (verbose)
            printf("heat dt=%g  BE %.3e  CN %.3e\n", dt, errb, errc);
        errb_old = errb; errc_old = errc; dt_old = dt;
    }
    free(uex); free(utmp);
    free_grid();
    fclose(fp);
    printf("wrote %s\n", fname);
    return 0;
}
