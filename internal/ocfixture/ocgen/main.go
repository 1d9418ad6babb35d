package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var o Options
	flag.StringVar(&o.Node, "node", "", "node 24 binary")
	flag.StringVar(&o.Entry, "openclaw", "", "openclaw.mjs of the installed openclaw package")
	flag.StringVar(&o.Work, "work", "", "scratch directory (created)")
	flag.StringVar(&o.Out, "out", "", "fixture directory (replaced)")
	flag.IntVar(&o.Nice, "nice", 0, "run OpenClaw under nice -n N (negative: higher priority)")
	flag.Parse()
	if o.Node == "" || o.Entry == "" || o.Work == "" || o.Out == "" {
		fmt.Fprintln(os.Stderr, "ocgen: -node, -openclaw, -work and -out are required")
		os.Exit(2)
	}
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "ocgen:", err)
		os.Exit(1)
	}
}
