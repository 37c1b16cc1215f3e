/*
 * grid.c -- work arrays and FFTW plans for an NG x NG periodic grid
 */
#include <stdio.h>
#include <stdlib.h>
#include "specpois.h"

void
alloc_grid(n)
int n;
{
    NG = n;
    rwork = (double *) fftw_malloc(sizeof(double) * n * n);
    cwork = (fftw_complex *) fftw_malloc(sizeof(fftw_complex) * n * (n/2 + 1));
    if (rwork == NULL || cwork == NULL) {
        fprintf(stderr, "specpois: out of memory (N=%d)\n", n);
        exit(1);
    }
    /* ESTIMATE: reproducible plans, no timing runs */
    pfwd = fftw_plan_dft_r2c_2d(n, n, rwork, cwork, FFTW_ESTIMATE);
    pbwd = fftw_plan_dft_c2r_2d(n, n, cwork, rwork, FFTW_ESTIMATE);
}

void
free_grid()
{
    fftw_destroy_plan(pfwd);
    fftw_destroy_plan(pbwd);
    fftw_free(rwork);
    fftw_free(cwork);
}

double
xcoord(i)
int i;
{
    return Lbox * (double) i / (double) NG;
}

/* signed wavenumber of index i (0..NG-1) on a box of length Lbox;
 * the Nyquist mode (i = NG/2) counts as +NG/2 (only even derivatives
 * are taken, so its sign does not matter) */
double
wavenum(i)
int i;
{
    int m = (i <= NG/2) ? i : i - NG;
    return 2.0 * PI * (double) m / Lbox;
}
