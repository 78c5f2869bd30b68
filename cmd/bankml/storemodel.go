package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/provenance"
	"github.com/bankml/bankml/store"
)

// storeModel is how bankml serve and run take a model by name: when arg names no file but is a NAME[:TAG]
// (not a path), the model comes from the store, pulled from the catalog on first use (through the mirror
// when --from or $BANKML_MIRROR names one). It returns the model file (the store's blob), the pin (the
// manifest's sha256: a pulled model is pinned by its manifest) and the manifest; a nil manifest means arg
// is to be read as a file path, as before. A manifest pin given on the command line too must agree.
func storeModel(cmd, arg, manifestFlag string, models storeFlag, from string, stderr errWriter, sigs *signals) (path, pin string, m *store.Manifest, err error) {
	if arg == "" || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(strings.ToLower(arg), ".gguf") {
		return arg, manifestFlag, nil, nil
	}
	if _, err := os.Stat(arg); err == nil || !errors.Is(err, os.ErrNotExist) {
		return arg, manifestFlag, nil, nil // a file of that name is there: it wins, as before
	}
	if _, _, err := catalog.ParseRef(arg); err != nil {
		return arg, manifestFlag, nil, nil // not a name: let the file path fail as it did
	}
	s, err := models.open()
	if err != nil {
		return "", "", nil, fmt.Errorf("%s: %w", cmd, err)
	}
	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, pulled, err := s.Resolve(ctx, arg, pullOptions(stderr, from))
	var nf *store.NotFoundError
	if errors.As(err, &nf) { // one sentence naming the model once, as given (the store's names it as NAME:TAG)
		return "", "", nil, fmt.Errorf("%s: %s is not a file, not in the store %s, and not in bankml's catalog (it has %s)", cmd, arg, nf.Root, strings.Join(nf.Catalog, ", "))
	}
	if err != nil {
		return "", "", nil, refusedPull(fmt.Errorf("%s: %w", cmd, err)) // store's errors name the model
	}
	if pulled {
		fmt.Fprintf(stderr, "%s: pulled %s (sha256 %s) into %s\n", cmd, m.Ref(), m.Model.SHA256, s.Root)
	}
	pin = m.Model.SHA256
	if err := agreesWithManifest(m, manifestFlag); err != nil {
		return "", "", nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return s.BlobPath(m.Model.SHA256), pin, m, nil
}

// agreesWithManifest checks a --manifest given beside a stored model against the store's pin, m's sha256: a
// digest must equal it; a manifest file (docs/manifest.md) is read and its entry for the model's file, by the
// name the file came with (m.Model.File, as a pin matches a file by its base name), checked against it as
// provenance.Check checks a hashed file. A malformed digest is a usage error (1), as on a file; a manifest that
// cannot be read is I/O (1); one that does not parse, or that pins the file otherwise or not at all, is refused
// (2), saying how it disagrees: another sha256 names the two hashes apart, "sha256 A of the file != B pinned in
// the manifest FORK.json" (or "pinned by --manifest" for a digest).
func agreesWithManifest(m *store.Manifest, manifestFlag string) error {
	if manifestFlag == "" {
		return nil
	}
	pin := m.Model.SHA256
	differs := func(want, where string) error {
		return cannotRun(fmt.Errorf("%s: sha256 %s of the file != %s pinned %s: refused", m.Ref(), pin, want, where))
	}
	disagrees := func(why string) error {
		return cannotRun(fmt.Errorf("%s (sha256 %s of the file): --manifest %s disagrees: %s", m.Ref(), pin, manifestFlag, why))
	}
	d, isDigest, err := provenance.DigestArg(manifestFlag)
	switch {
	case err != nil:
		return err
	case isDigest && d != pin:
		return differs(d, "by --manifest")
	case isDigest:
		return nil
	}
	fm, err := provenance.ReadManifest(manifestFlag)
	if errors.Is(err, provenance.ErrBadManifest) {
		return cannotRun(fmt.Errorf("%w: %w", err, provenance.ErrRefused))
	}
	if err != nil {
		return err
	}
	hashed := provenance.Result{Name: m.Model.File, SHA256: pin, Size: m.Model.Size, WantSize: -1}
	res, err := provenance.Check(hashed, fm.Lookup(m.Model.File), filepath.Base(manifestFlag))
	switch {
	case err != nil && res.Want != "" && res.Want != pin:
		return differs(res.Want, "in the manifest "+manifestFlag)
	case err != nil:
		return disagrees(err.Error())
	}
	return nil
}
