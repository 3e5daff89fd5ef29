// Command logstore moves logs from Kafka to Parquet files and back to Kafka,
// reading every partition from a replica in the worker's own zone.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
)

// Exit codes: 0 success, 1 a runtime failure, 2 a usage or config error,
// 3 a run with a target (--until now, --from/--to) stopped by a signal
// before it reached the target: committed, but not done; 4 a static member
// fenced by another process with its kafka.group_instance_id (restarting
// it would fence the other in turn).
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
	exitStopped = 3
	exitFenced  = 4
)

// command is one subcommand. run returns an error; usageError,
// *pipeline.ConfigError and *sink.TableConfigError (a table that cannot
// take what the config writes) exit 2, anything else 1.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	imdsV2OnlyForAWSCredentials()
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// imdsV2OnlyForAWSCredentials makes the AWS SDK's instance-profile
// credentials (S3, MSK IAM) speak IMDSv2 only, as rack detection does,
// through the SDK's own variable; setting it in the environment (false)
// opts back into IMDSv1.
func imdsV2OnlyForAWSCredentials() {
	if _, set := os.LookupEnv("AWS_EC2_METADATA_V1_DISABLED"); !set {
		_ = os.Setenv("AWS_EC2_METADATA_V1_DISABLED", "true")
	}
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		// Asked-for help is the command's output: it goes to stdout, so
		// `logstore --help | less` works; a usage mistake goes to stderr.
		printUsage(stdout)
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-v" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "logstore: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return exitUsage
	}
	// The first SIGINT/SIGTERM cancels ctx (graceful stop); the run
	// command installs its own handling for the second one.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile, stopHeap := startCPUProfile(stderr), startHeapProfile(stderr)
	err := cmd.run(ctx, args[1:], stdout, stderr)
	stopHeap()
	stopProfile()
	return exitCode(err, stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "logstore: %v\n", err)
	var ue usageError
	var ce *pipeline.ConfigError
	var te *sink.TableConfigError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &te) || errors.Is(err, sink.ErrNoTableSink) {
		return exitUsage
	}
	if errors.Is(err, pipeline.ErrStoppedEarly) {
		return exitStopped
	}
	if errors.Is(err, pipeline.ErrFencedInstance) {
		return exitFenced
	}
	return exitRuntime
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: logstore <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'logstore <command> --help' for a command's flags.")
}

// newFlags makes a flag set whose errors are returned, not fatal, and whose
// usage line names the command. What the flag package prints while parsing
// is held until parseFlags knows why: the usage asked for with --help goes
// to stdout, a flag mistake and its usage to stderr.
func newFlags(name, usage string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{stdout: stdout, stderr: stderr})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: logstore %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// flagOutput buffers a flag set's output during Parse.
type flagOutput struct {
	stdout, stderr io.Writer
	buf            bytes.Buffer
}

func (o *flagOutput) Write(p []byte) (int, error) { return o.buf.Write(p) }

// flush sends what Parse printed to stdout when help was asked for, else to
// stderr.
func (o *flagOutput) flush(help bool) {
	w := o.stderr
	if help {
		w = o.stdout
	}
	_, _ = o.buf.WriteTo(w)
}

// parseFlags parses and turns a flag error into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if out, ok := fs.Output().(*flagOutput); ok {
		out.flush(errors.Is(err, flag.ErrHelp))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
