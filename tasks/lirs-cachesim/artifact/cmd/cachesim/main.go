// cachesim replays block reference strings through several replacement
// policies and reports hit ratios.
//
//	cachesim -experiment experiments/table2.json -out results/table2.csv
//	cachesim -trace msr_src1_0.csv -format msr -sizes 1024,4096 -policies lru,arc,lirs
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hpss-lab/cachesim/policy"
	"github.com/hpss-lab/cachesim/workload"
	"github.com/hpss-lab/tracefmt"
)

type experiment struct {
	Description string          `json:"description"`
	Policies    []string        `json:"policies"`
	Opt         bool            `json:"opt"`
	Sizes       []int           `json:"sizes"`
	Workloads   []workload.Spec `json:"workloads"`
}

type row struct {
	workload string
	size     int
	policy   string
	refs     int
	hits     int
}

func simulate(name string, refs []policy.Key, sizes []int, pols []string, opt bool) ([]row, error) {
	var rows []row
	for _, sz := range sizes {
		for _, pn := range pols {
			p, err := policy.New(pn, sz)
			if err != nil {
				return nil, err
			}
			hits := 0
			for _, k := range refs {
				if p.Access(k) {
					hits++
				}
			}
			if p.Len() > sz {
				return nil, fmt.Errorf("%s holds %d blocks in a cache of %d", pn, p.Len(), sz)
			}
			rows = append(rows, row{name, sz, p.Name(), len(refs), hits})
		}
		if opt {
			rows = append(rows, row{name, sz, "opt", len(refs), policy.OptHits(refs, sz)})
		}
	}
	return rows, nil
}

func writeRows(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"workload", "cache_size", "policy", "refs", "hits", "hit_ratio"})
	for _, r := range rows {
		cw.Write([]string{
			r.workload, strconv.Itoa(r.size), r.policy, strconv.Itoa(r.refs),
			strconv.Itoa(r.hits), fmt.Sprintf("%.4f", float64(r.hits)/float64(r.refs)),
		})
	}
	cw.Flush()
	return cw.Error()
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("cachesim: ")
	expFile := flag.String("experiment", "", "experiment description (JSON)")
	traceFile := flag.String("trace", "", "replay this trace file instead")
	format := flag.String("format", "msr", "trace format: msr, spc or keys")
	bs := flag.Int64("block", 4096, "block size in bytes (msr, spc)")
	readsOnly := flag.Bool("reads-only", false, "ignore write requests")
	sizes := flag.String("sizes", "1024", "cache sizes in blocks (with -trace)")
	pols := flag.String("policies", strings.Join(policy.Names(), ","), "policies (with -trace)")
	opt := flag.Bool("opt", false, "also compute Belady's OPT (with -trace)")
	out := flag.String("out", "", "write the CSV here instead of stdout")
	flag.Parse()

	var rows []row
	switch {
	case *expFile != "":
		b, err := ioutil.ReadFile(*expFile)
		if err != nil {
			log.Fatal(err)
		}
		var e experiment
		if err := json.Unmarshal(b, &e); err != nil {
			log.Fatalf("%s: %v", *expFile, err)
		}
		for _, ws := range e.Workloads {
			refs, err := workload.Generate(ws)
			if err != nil {
				log.Fatal(err)
			}
			log.Printf("workload %-10s %8d refs", ws.Name, len(refs))
			rs, err := simulate(ws.Name, refs, e.Sizes, e.Policies, e.Opt)
			if err != nil {
				log.Fatal(err)
			}
			rows = append(rows, rs...)
		}
	case *traceFile != "":
		f, err := os.Open(*traceFile)
		if err != nil {
			log.Fatal(err)
		}
		var refs []policy.Key
		st, err := tracefmt.Read(f, *format, tracefmt.Options{BlockSize: *bs, ReadsOnly: *readsOnly},
			func(b uint64) { refs = append(refs, policy.Key(b)) })
		f.Close()
		if err != nil {
			log.Fatalf("%s: %v", *traceFile, err)
		}
		log.Printf("%s: %d requests, %d block references, %d lines skipped",
			*traceFile, st.Requests, st.Blocks, st.Skipped)
		sz, err := parseInts(*sizes)
		if err != nil {
			log.Fatalf("-sizes: %v", err)
		}
		rows, err = simulate(filepath.Base(*traceFile), refs, sz, strings.Split(*pols, ","), *opt)
		if err != nil {
			log.Fatal(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}

	w := io.Writer(os.Stdout)
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0755); err != nil {
			log.Fatal(err)
		}
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		w = f
	}
	if err := writeRows(w, rows); err != nil {
		log.Fatal(err)
	}
}
