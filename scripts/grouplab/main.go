// Command grouplab is the group lab's helper (scripts/grouplab.sh): a steady
// producer and a sampler of the members' metrics, both faster and lighter
// than a shell loop.
//
//	grouplab produce -brokers B -topic T -partitions N -rate R
//	    produces generated JSON logs (internal/loggen) at R records/s, record
//	    i to partition i % N, until SIGTERM; then waits for every record to
//	    be acknowledged and prints "produced K records into T". franz-go's
//	    idempotent producer neither loses, repeats nor reorders a record, so
//	    record i is at offset i / N of its partition. With -now each record's
//	    timestamp is the time it is handed to the client instead of its
//	    event time: the EOS lab (scripts/eos-lab.sh) measures produce to
//	    visible from it.
//	grouplab sample -every 100ms -out FILE -files DIR NAME=URL...
//	    every interval, scrapes each member's /metrics at URL and appends
//	    "EPOCH_MS NAME RECORDS GENERATION REBALANCES ASSIGNED" to FILE, or
//	    "EPOCH_MS NAME down" when it does not answer; every 500 ms, appends
//	    "EPOCH_MS file PATH" for each Parquet file new under DIR. Until SIGTERM.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/loggen"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grouplab produce|sample FLAGS (see the package doc)")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := fs.String("brokers", "", "produce: bootstrap brokers, comma-separated")
	topic := fs.String("topic", "", "produce: topic")
	partitions := fs.Int("partitions", 0, "produce: the topic's partition count")
	rate := fs.Float64("rate", 1000, "produce: records per second")
	now := fs.Bool("now", false, "produce: stamp records with the time they are produced, not their event time")
	every := fs.Duration("every", 100*time.Millisecond, "sample: interval")
	out := fs.String("out", "", "sample: the file the samples go to")
	files := fs.String("files", "", "sample: the output folder to watch for new Parquet files")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "produce":
		if *brokers == "" || *topic == "" || *partitions <= 0 || *rate <= 0 {
			fmt.Fprintln(os.Stderr, "grouplab produce: -brokers, -topic, -partitions and -rate are required")
			os.Exit(2)
		}
		err = produce(ctx, strings.Split(*brokers, ","), *topic, *partitions, *rate, *now)
	case "sample":
		if *out == "" || fs.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "grouplab sample: -out and at least one NAME=URL are required")
			os.Exit(2)
		}
		err = sample(ctx, *every, *out, *files, fs.Args())
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grouplab:", err)
		os.Exit(1)
	}
}

func produce(ctx context.Context, brokers []string, topic string, partitions int, rate float64, now bool) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	gen := loggen.New(23, start, time.Duration(float64(time.Second)/rate))
	failure := make(chan error, 1)
	sent := 0
	// A tick sends what the rate owes since the start, so a slow tick is
	// made up by the next and the average holds.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		case err := <-failure:
			return fmt.Errorf("producing to %s: %w", topic, err)
		}
		for due := int(time.Since(start).Seconds() * rate); sent < due && ctx.Err() == nil; sent++ {
			key, value, at := gen.Next()
			r := &kgo.Record{Key: key, Value: append([]byte(nil), value...), Partition: int32(sent % partitions), Timestamp: at}
			if now {
				r.Timestamp = time.Time{} // kgo stamps it in Produce
			}
			cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case failure <- err:
					default:
					}
				}
			})
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		return err
	}
	select {
	case err := <-failure:
		return fmt.Errorf("producing to %s: %w", topic, err)
	default:
	}
	fmt.Printf("produced %d records into %s in %.1f s\n", sent, topic, time.Since(start).Seconds())
	return nil
}

// scraped are the metrics the lab reads, by their Prometheus names.
var scraped = []string{"logstore_records_total", "logstore_group_generation", "logstore_rebalances_total", "logstore_assigned_partitions"}

func sample(ctx context.Context, every time.Duration, out, dir string, members []string) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	client := &http.Client{Timeout: every}
	seen := make(map[string]bool)
	tick := time.NewTicker(every)
	defer tick.Stop()
	lastWalk := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for _, m := range members {
			name, url, ok := strings.Cut(m, "=")
			if !ok {
				return fmt.Errorf("member %q: want NAME=URL", m)
			}
			now := time.Now().UnixMilli()
			values, err := scrape(client, url)
			if err != nil {
				fmt.Fprintf(w, "%d %s down\n", now, name)
				continue
			}
			fmt.Fprintf(w, "%d %s", now, name)
			for _, v := range values {
				fmt.Fprintf(w, " %s", v)
			}
			fmt.Fprintln(w)
		}
		if dir != "" && time.Since(lastWalk) >= 500*time.Millisecond {
			lastWalk = time.Now()
			walkNew(w, dir, seen)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// scrape reads the scraped metrics from one /metrics page, "-" for any
// the page lacks.
func scrape(client *http.Client, url string) ([]string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	values := []string{"-", "-", "-", "-"}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for i, s := range scraped {
			if name == s {
				if v, err := strconv.ParseFloat(value, 64); err == nil {
					values[i] = strconv.FormatInt(int64(v), 10)
				}
			}
		}
	}
	return values, sc.Err()
}

// walkNew notes each Parquet file under dir not seen before; folders
// starting with _ (dead letters) are skipped, as readers skip them.
func walkNew(w *bufio.Writer, dir string, seen map[string]bool) {
	now := time.Now().UnixMilli()
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // not there yet
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), "_") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".parquet") && !seen[path] {
			seen[path] = true
			fmt.Fprintf(w, "%d file %s\n", now, path)
		}
		return nil
	})
}
