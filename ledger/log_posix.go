//go:build !windows

package ledger

import (
	"context"
	"fmt"
	"os"

	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// OpenPOSIXLog opens (creating it if needed) the transparency log stored as files in dir (tessera's POSIX
// storage: checkpoint, tile/..., tile/entries/..., laid out as C2SP tlog-tiles, so the folder itself can
// be served as the log), signing checkpoints with signer. One process appends to a folder at a time
// (tessera locks it while it integrates).
func OpenPOSIXLog(dir string, signer note.Signer, verifier note.Verifier, o LogOptions) (*Log, error) {
	o.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	d, err := posix.New(context.Background(), posix.Config{Path: dir})
	if err != nil {
		return nil, fmt.Errorf("ledger: the POSIX log in %s: %w", dir, err)
	}
	return newLog(d, signer, verifier, o, nil)
}
