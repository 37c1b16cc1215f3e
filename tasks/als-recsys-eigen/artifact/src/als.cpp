// als.cpp -- ALS-WR matrix factorisation for explicit ratings (Zhou et al.,
// 2008) and a regularised-bias baseline.  Table 1 of the paper.
//
//   ./als configs/table1.cfg [key=value ...]
//
// Keys: ratings, test_fraction, seed, lambda, bias_lambda, iterations,
// ranks (a list), init_scale, out.

#include <iostream>
#include <fstream>
#include <sstream>
#include <iomanip>
#include <map>
#include <memory>
#include <functional>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <Eigen/Core>
#include <Eigen/Array>
#include <Eigen/Cholesky>

#include "ratings.h"
#include "rng.h"

using namespace std;
using namespace Eigen;

// ---------------------------------------------------------------- settings

typedef map<string, string> Config;

int rank = 10;            // latent dimension of the current run
double lambda = 0.05;     // ALS-WR regularisation (times n_u / n_i)
int iterations = 15;

static Config read_config(const char* path, int argc, char** argv)
{
    Config c;
    ifstream in(path);
    if (!in) {
        cerr << "cannot open config " << path << endl;
        exit(1);
    }
    string line;
    while (getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        string::size_type eq = line.find('=');
        if (eq == string::npos) continue;
        string k = line.substr(0, eq), v = line.substr(eq + 1);
        k.erase(k.find_last_not_of(" \t") + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        c[k] = v;
    }
    for (int a = 0; a < argc; ++a) {          // key=value overrides
        string s(argv[a]);
        string::size_type eq = s.find('=');
        if (eq != string::npos) c[s.substr(0, eq)] = s.substr(eq + 1);
    }
    return c;
}

static double num(Config& c, const char* key, double dflt)
{
    return c.count(key) ? atof(c[key].c_str()) : dflt;
}

// ---------------------------------------------------------------- models

struct Baseline {
    double mu;
    VectorXd bu, bi;

    void fit(const RatingSet& tr, double reg, int sweeps) {
        mu = tr.mean();
        bu = VectorXd::Zero(tr.n_users);
        bi = VectorXd::Zero(tr.n_items);
        VectorXd s(tr.n_users), n(tr.n_users), si(tr.n_items), ni(tr.n_items);
        for (int sweep = 0; sweep < sweeps; ++sweep) {
            s.setZero(); n.setZero();
            for (size_t k = 0; k < tr.r.size(); ++k) {
                const Rating& x = tr.r[k];
                s[x.user] += x.value - mu - bi[x.item];
                n[x.user] += 1;
            }
            for (int u = 0; u < tr.n_users; ++u) bu[u] = s[u] / (n[u] + reg);
            si.setZero(); ni.setZero();
            for (size_t k = 0; k < tr.r.size(); ++k) {
                const Rating& x = tr.r[k];
                si[x.item] += x.value - mu - bu[x.user];
                ni[x.item] += 1;
            }
            for (int i = 0; i < tr.n_items; ++i) bi[i] = si[i] / (ni[i] + reg);
        }
    }
    double predict(int u, int i) const { return mu + bu[u] + bi[i]; }
};

struct ALS {
    double mu;
    MatrixXd U, V;      // rank x n_users, rank x n_items

    void init(const RatingSet& tr, MinStd& rng, double scale) {
        mu = tr.mean();
        U.resize(rank, tr.n_users);
        V.resize(rank, tr.n_items);
        for (int j = 0; j < U.cols(); ++j)
            for (int f = 0; f < rank; ++f) U(f, j) = scale * rng.normal();
        for (int j = 0; j < V.cols(); ++j)
            for (int f = 0; f < rank; ++f) V(f, j) = scale * rng.normal();
    }

    // one half-sweep: solve for the columns of X with Y fixed
    static void solve(MatrixXd& X, const MatrixXd& Y,
                      const vector<vector<pair<int, double> > >& by, double lam)
    {
        const int k = X.rows();
        for (int j = 0; j < X.cols(); ++j) {
            const vector<pair<int, double> >& obs = by[j];
            if (obs.empty()) { X.col(j).setZero(); continue; }
            MatrixXd A = MatrixXd::Zero(k, k);
            VectorXd b = VectorXd::Zero(k);
            for (size_t m = 0; m < obs.size(); ++m) {
                A.noalias() += Y.col(obs[m].first) * Y.col(obs[m].first).transpose();
                b += obs[m].second * Y.col(obs[m].first);
            }
            A.diagonal().array() += lam * obs.size();
            X.col(j) = A.ldlt().solve(b);
        }
    }

    void fit(const RatingSet& tr) {
        vector<vector<pair<int, double> > > byUser(tr.n_users), byItem(tr.n_items);
        vector<double> centred(tr.r.size());
        for (size_t k = 0; k < tr.r.size(); ++k) centred[k] = tr.r[k].value;
        transform(centred.begin(), centred.end(), centred.begin(),
                  bind2nd(minus<double>(), mu));
        for (size_t k = 0; k < tr.r.size(); ++k) {
            byUser[tr.r[k].user].push_back(make_pair(tr.r[k].item, centred[k]));
            byItem[tr.r[k].item].push_back(make_pair(tr.r[k].user, centred[k]));
        }
        for (int it = 0; it < iterations; ++it) {
            solve(U, V, byUser, lambda);
            solve(V, U, byItem, lambda);
        }
    }
    double predict(int u, int i) const { return mu + U.col(u).dot(V.col(i)); }
};

template <class Model>
double rmse(const Model& m, const RatingSet& s)
{
    double se = 0;
    for (size_t k = 0; k < s.r.size(); ++k) {
        double p = m.predict(s.r[k].user, s.r[k].item);
        p = p < 1 ? 1 : (p > 5 ? 5 : p);          // ratings are 1..5
        double e = p - s.r[k].value;
        se += e * e;
    }
    return sqrt(se / s.r.size());
}

// ---------------------------------------------------------------- main

int main(int argc, char** argv)
{
    if (argc < 2) {
        cerr << "usage: als CONFIG [key=value ...]" << endl;
        return 2;
    }
    Config cfg = read_config(argv[1], argc - 2, argv + 2);
    lambda = num(cfg, "lambda", lambda);
    iterations = (int) num(cfg, "iterations", iterations);
    const double bias_lambda = num(cfg, "bias_lambda", 10.0);
    const double init_scale = num(cfg, "init_scale", 0.1);
    const string out = cfg.count("out") ? cfg["out"] : "results/table1.csv";

    auto_ptr<RatingSet> train(new RatingSet);
    RatingSet test;
    try {
        train->load(cfg["ratings"]);
    } catch (runtime_error& e) {
        cerr << e.what() << endl;
        return 1;
    }
    MinStd rng((long) num(cfg, "seed", 1));
    train->split(num(cfg, "test_fraction", 0.2), rng, test);
    cout << "ratings: " << train->size() << " train, " << test.size()
         << " test; " << train->n_users << " users, " << train->n_items
         << " items" << endl;

    ofstream csv(out.c_str());
    if (!csv) {
        cerr << "cannot write " << out << endl;
        return 1;
    }
    csv << "model,rank,lambda,train_rmse,test_rmse" << endl;
    csv << setprecision(10);
    cout << setprecision(6) << fixed;

    Baseline base;
    base.fit(*train, bias_lambda, 10);
    csv << "bias,0," << bias_lambda << "," << rmse(base, *train) << ","
        << rmse(base, test) << endl;
    cout << "bias baseline: test RMSE " << rmse(base, test) << endl;

    istringstream ranks(cfg["ranks"]);
    int k;
    while (ranks >> k) {
        rank = k;
        ALS m;
        m.init(*train, rng, init_scale);
        m.fit(*train);
        double tr = rmse(m, *train), te = rmse(m, test);
        csv << "als," << rank << "," << lambda << "," << tr << "," << te << endl;
        cout << "ALS rank " << setw(2) << rank << ": train RMSE " << tr
             << "  test RMSE " << te << endl;
    }
    cout << "wrote " << out << endl;
    return 0;
}
