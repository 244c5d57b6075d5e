// Command benchtable reads `go test -bench` output on stdin and prints one table of the
// figures docs/benchmarks.tsv tracks: each measured value beside its committed figure,
// flagging any that got more than 25% worse. It never fails on a flag (exit 0): timings
// on a shared machine inform, they do not decide. A missing or unreadable input is an
// error.
//
//	go test -run '^$' -bench . ./internal/... | tee bench.out | go run ./scripts/benchtable
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// figure is one tracked metric of one benchmark, as committed.
type figure struct {
	pkg, bench, metric string
	committed          float64
	higherIsBetter     bool
	what               string
}

// worse is how much worse than committed a figure may get before it is flagged.
const worse = 0.25

func main() {
	figuresPath := flag.String("figures", "docs/benchmarks.tsv", "the committed figures")
	flag.Parse()
	figures, err := readFigures(*figuresPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	measured, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	flags := report(os.Stdout, figures, measured)
	if flags > 0 {
		fmt.Printf("\n%d figure(s) more than %.0f%% worse than committed (flagged, not failed: re-run on a quiet machine before believing one)\n", flags, worse*100)
	}
}

// readFigures reads the TSV: package, benchmark, metric, figure, lower|higher, what.
func readFigures(path string) ([]figure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []figure
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" || n == 1 {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 6 {
			return nil, fmt.Errorf("%s:%d: want 6 tab-separated columns, got %d", path, n, len(cols))
		}
		v, err := strconv.ParseFloat(cols[3], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: figure %q: %v", path, n, cols[3], err)
		}
		if cols[4] != "lower" && cols[4] != "higher" {
			return nil, fmt.Errorf("%s:%d: better is lower or higher, not %q", path, n, cols[4])
		}
		out = append(out, figure{pkg: cols[0], bench: cols[1], metric: cols[2], committed: v, higherIsBetter: cols[4] == "higher", what: cols[5]})
	}
	return out, sc.Err()
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parse reads go test's output into package -> benchmark -> metric -> value (the last
// value seen, for a benchmark run more than once).
func parse(r io.Reader) (map[string]map[string]map[string]float64, error) {
	out := map[string]map[string]map[string]float64{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			if out[pkg] == nil {
				out[pkg] = map[string]map[string]float64{}
			}
			if out[pkg][m[1]] == nil {
				out[pkg][m[1]] = map[string]float64{}
			}
			out[pkg][m[1]][fields[i+1]] = v
		}
	}
	return out, sc.Err()
}

// report prints the table and returns how many figures it flagged.
func report(w io.Writer, figures []figure, measured map[string]map[string]map[string]float64) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHAT\tBENCHMARK\tMETRIC\tNOW\tCOMMITTED\tCHANGE\t")
	flags := 0
	for _, f := range figures {
		v, ok := lookup(measured, f)
		if !ok {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%s\tnot run\t\n", f.what, f.bench, f.metric, num(f.committed))
			continue
		}
		change := (v - f.committed) / f.committed
		if f.higherIsBetter {
			change = (f.committed - v) / f.committed
		}
		words := fmt.Sprintf("%.0f%% better", -change*100)
		if change >= 0 {
			words = fmt.Sprintf("%.0f%% worse", change*100)
		}
		if change > worse {
			words += "  FLAG"
			flags++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", f.what, f.bench, f.metric, num(v), num(f.committed), words)
	}
	tw.Flush()
	return flags
}

// lookup finds f's metric in the run: its package named by its path's suffix. A metric
// "A / B" is the ratio of two the benchmark reports (a figure against its baseline).
func lookup(measured map[string]map[string]map[string]float64, f figure) (float64, bool) {
	for pkg, benches := range measured {
		if pkg != f.pkg && !strings.HasSuffix(pkg, "/"+f.pkg) {
			continue
		}
		metrics := benches[f.bench]
		if a, b, ok := strings.Cut(f.metric, " / "); ok {
			if num, den := metrics[a], metrics[b]; den != 0 && num != 0 {
				return num / den, true
			}
			continue
		}
		if v, ok := metrics[f.metric]; ok {
			return v, true
		}
	}
	return 0, false
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
