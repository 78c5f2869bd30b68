//go:build nobench

package main

import "errors"

// benchCmd is `bankml bench` in a binary built with -tags nobench (the container image, deploy/.ko.yaml):
// bench loads the reference (llama.cpp's libraries) through purego, which makes a binary dynamically
// linked; without it bankml is one static binary.
type benchCmd struct {
	Args []string `arg:"" optional:"" passthrough:""`
}

func (benchCmd) Run() error {
	return errors.New("bench: not in this build (built with -tags nobench, for a static binary: bench loads the reference through the dynamic loader); use a bankml built without that tag")
}
