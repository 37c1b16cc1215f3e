#include "ratings.h"

#include <fstream>
#include <sstream>
#include <numeric>

void RatingSet::load(const std::string& path) throw(std::runtime_error)
{
    std::ifstream in(path.c_str());
    if (!in)
        throw std::runtime_error("cannot open ratings file " + path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        std::istringstream ss(line);
        Rating x;
        if (!(ss >> x.user >> x.item >> x.value))
            throw std::runtime_error("bad line in " + path + ": " + line);
        x.user -= 1;
        x.item -= 1;
        if (x.user + 1 > n_users) n_users = x.user + 1;
        if (x.item + 1 > n_items) n_items = x.item + 1;
        r.push_back(x);
    }
}

void RatingSet::split(double fraction, MinStd& rng, RatingSet& test) throw()
{
    std::vector<Rating> keep;
    test.r.clear();
    test.n_users = n_users;
    test.n_items = n_items;
    for (std::vector<Rating>::const_iterator it = r.begin(); it != r.end(); ++it) {
        if (rng.uniform() < fraction)
            test.r.push_back(*it);
        else
            keep.push_back(*it);
    }
    r.swap(keep);
}

double RatingSet::mean() const
{
    double s = 0;
    for (size_t k = 0; k < r.size(); ++k)
        s += r[k].value;
    return s / r.size();
}
