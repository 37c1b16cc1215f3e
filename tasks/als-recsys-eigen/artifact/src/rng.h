// rng.h -- portable pseudo-random numbers.
//
// We do not use rand()/drand48(): their streams differ between the C
// libraries we ran on (glibc, Mac OS X), and the paper's numbers must be
// the same everywhere.  Park & Miller's "minimal standard" generator with
// Schrage's trick, plus Box-Muller for normals.
#ifndef ALS_RNG_H
#define ALS_RNG_H

#include <cmath>

class MinStd {
public:
    explicit MinStd(long seed) : state_(seed % 2147483647L) {
        if (state_ <= 0) state_ += 2147483646L;
    }
    // uniform on (0, 1)
    double uniform() {
        register long hi = state_ / 127773L;
        register long lo = state_ % 127773L;
        state_ = 16807L * lo - 2836L * hi;
        if (state_ <= 0) state_ += 2147483647L;
        return state_ / 2147483647.0;
    }
    double normal() {
        double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
private:
    long state_;
};

#endif
