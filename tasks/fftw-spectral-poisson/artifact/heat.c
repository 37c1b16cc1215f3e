/*
 * heat.c -- u_t = nu lap u on the periodic box, u(0) = exact_u
 *
 * Fourier in space; in time
 *   scheme 0: exact (exponential) integrator  -> reference
 *   scheme 1: backward Euler                     O(dt)
 *   scheme 2: Crank-Nicolson                     O(dt^2)
 * Result in rwork.
 */
#include <math.h>
#include "specpois.h"

void
heat_run(scheme, dt, nsteps)
int scheme;
double dt;
int nsteps;
{
    int i, j, nc = NG/2 + 1;
    double k1, k2, lam, g, scale;

    exact_u(rwork);
    fftw_execute(pfwd);
    scale = 1.0 / ((double) NG * NG);
    for (i = 0; i < NG; i++) {
        k1 = wavenum(i);
        for (j = 0; j < nc; j++) {
            k2 = wavenum(j);
            lam = nu * (k1*k1 + k2*k2);
            if (scheme == 0)
                g = exp(-lam * dt * nsteps);
            else if (scheme == 1)
                g = pow(1.0 / (1.0 + lam*dt), (double) nsteps);
            else
                g = pow((1.0 - 0.5*lam*dt) / (1.0 + 0.5*lam*dt), (double) nsteps);
            cwork[i*nc+j][0] *= g * scale;
            cwork[i*nc+j][1] *= g * scale;
        }
    }
    fftw_execute(pbwd);
}
