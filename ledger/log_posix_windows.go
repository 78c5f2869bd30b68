package ledger

import (
	"errors"

	"golang.org/x/mod/sumdb/note"
)

// OpenPOSIXLog is not available on Windows: tessera's POSIX storage locks files with fcntl. Use a
// MySQL/MariaDB log (OpenMySQLLog, bankml serve --history-db).
func OpenPOSIXLog(dir string, signer note.Signer, verifier note.Verifier, o LogOptions) (*Log, error) {
	return nil, errors.New("ledger: the POSIX transparency log is not available on Windows (tessera locks its files with fcntl): give --history-db DSN for a MySQL/MariaDB log")
}
