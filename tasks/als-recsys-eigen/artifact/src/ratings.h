// ratings.h -- explicit ratings (user, item, value) and a random split
#ifndef ALS_RATINGS_H
#define ALS_RATINGS_H

#include <vector>
#include <string>
#include <stdexcept>

#include "rng.h"

struct Rating {
    int user, item;   // 0-based after loading
    double value;
};

class RatingSet {
public:
    RatingSet() : n_users(0), n_items(0) {}

    // reads "user<TAB>item<TAB>rating" lines, ids starting at 1
    void load(const std::string& path) throw(std::runtime_error);
    // moves a fraction of the ratings into `test`, chosen with `rng`
    void split(double fraction, MinStd& rng, RatingSet& test) throw();

    double mean() const;
    size_t size() const { return r.size(); }

    std::vector<Rating> r;
    int n_users, n_items;
};

#endif
