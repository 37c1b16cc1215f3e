/*
 * poisson.c -- -lap u = f on the periodic box
 *
 * Manufactured solution u = exp(g), g = a sin(kx x) + b cos(ky y), so that
 *   f = -u (g_x^2 + g_y^2 + g_xx + g_yy).
 * u is determined up to a constant: compare zero-mean parts.
 *
 * method 0: Fourier spectral,  uhat = fhat / |k|^2
 * method 1: 2nd-order FD,      uhat = fhat / (kmod_x^2 + kmod_y^2),
 *           kmod^2 = (2 - 2 cos(k h)) / h^2
 */
#include <math.h>
#include "specpois.h"

void
exact_u(u)
double *u;
{
    int i, j;
    double x, y, kx, ky, mean = 0.0;

    kx = 2.0*PI*kx0/Lbox; ky = 2.0*PI*ky0/Lbox;
    for (i = 0; i < NG; i++)
        for (j = 0; j < NG; j++) {
            x = xcoord(i); y = xcoord(j);
            u[i*NG+j] = exp(amp_a*sin(kx*x) + amp_b*cos(ky*y));
            mean += u[i*NG+j];
        }
    mean /= (double) NG * NG;
    for (i = 0; i < NG*NG; i++) u[i] -= mean;
}

void
rhs_f(f)
double *f;
{
    int i, j;
    double x, y, u, gx, gy, gxx, gyy, kx, ky;

    kx = 2.0*PI*kx0/Lbox; ky = 2.0*PI*ky0/Lbox;
    for (i = 0; i < NG; i++)
        for (j = 0; j < NG; j++) {
            x = xcoord(i); y = xcoord(j);
            u   = exp(amp_a*sin(kx*x) + amp_b*cos(ky*y));
            gx  =  amp_a*kx*cos(kx*x);
            gxx = -amp_a*kx*kx*sin(kx*x);
            gy  = -amp_b*ky*sin(ky*y);
            gyy = -amp_b*ky*ky*cos(ky*y);
            f[i*NG+j] = -u*(gx*gx + gy*gy + gxx + gyy);
        }
}

/* rwork holds f on entry, u (zero mean) on exit */
void
solve_poisson(method)
int method;
{
    int i, j, nc = NG/2 + 1;
    double k1, k2, k2sum, h, scale;

    h = Lbox / NG;
    scale = 1.0 / ((double) NG * NG);
    fftw_execute(pfwd);
    for (i = 0; i < NG; i++) {
        k1 = wavenum(i);
        for (j = 0; j < nc; j++) {
            k2 = wavenum(j);
            if (method == 0)
                k2sum = k1*k1 + k2*k2;
            else
                k2sum = (2.0 - 2.0*cos(k1*h))/(h*h) + (2.0 - 2.0*cos(k2*h))/(h*h);
            if (k2sum == 0.0) {
                cwork[i*nc+j][0] = 0.0;
                cwork[i*nc+j][1] = 0.0;
            } else {
                cwork[i*nc+j][0] *= scale / k2sum;
                cwork[i*nc+j][1] *= scale / k2sum;
            }
        }
    }
    fftw_execute(pbwd);
}

double
maxdiff(a, b, n)
double *a, *b;
int n;
{
    int i;
    double d, m = 0.0;
    for (i = 0; i < n; i++) {
        d = fabs(a[i] - b[i]);
        if (d > m) m = d;
    }
    return m;
}
