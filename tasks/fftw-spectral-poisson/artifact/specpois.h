/*
 * specpois.h -- common declarations for SPECPOIS
 *
 * Fourier pseudo-spectral solution of the periodic Poisson and heat
 * equations on [0,L)^2, with second-order finite differences (via modified
 * wavenumbers) for comparison.
 *
 * Global run parameters live here (see params.c for the reader).
 */
#ifndef SPECPOIS_H
#define SPECPOIS_H

#include <fftw3.h>

#define MAXLIST 32
#define PI 3.14159265358979323846

/* ---- run parameters (set by readpar) ---- */
double  Lbox;                 /* box length                         */
double  amp_a, amp_b;         /* u = exp(a sin(kx x) + b cos(ky y)) */
int     kx0, ky0;
int     nlist[MAXLIST];       /* grid sizes for the Poisson table   */
int     nn;
double  nu, tend;             /* heat equation: diffusivity, time   */
int     nheat;                /* grid for the heat table            */
double  dtlist[MAXLIST];
int     ndt;
int     verbose;

/* ---- work arrays (set by alloc_grid) ---- */
int            NG;            /* current grid size                  */
double        *rwork;         /* NG*NG real                         */
fftw_complex  *cwork;         /* NG*(NG/2+1) complex                */
fftw_plan      pfwd, pbwd;

/* params.c */
int    readpar();
/* grid.c */
void   alloc_grid();
void   free_grid();
double xcoord();
double wavenum();
/* poisson.c */
void   exact_u();
void   rhs_f();
void   solve_poisson();
double maxdiff();
/* heat.c */
void   heat_step_exact();
void   heat_run();
#endif
