package admit

import (
	"fmt"
	"os"
	"time"
)

// FileIdentity is what identifies the bytes of a model file without reading them: the device and inode it
// lives on (on Windows, the volume serial number and file index; zero where the system has neither), its
// size in bytes and its modification time (nanoseconds). A file replaced, rewritten or touched after it was
// hashed no longer has the identity it was hashed with.
type FileIdentity struct {
	Dev   uint64 `json:"dev"`
	Inode uint64 `json:"inode"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"` // Unix nanoseconds
}

// StatIdentity returns the identity of the file at path (following symbolic links, as opening it does).
// The error is os.Stat's (or, on Windows, opening the file's).
func StatIdentity(path string) (FileIdentity, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileIdentity{}, err
	}
	id := FileIdentity{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if id.Dev, id.Inode, err = fileID(path, fi); err != nil {
		return FileIdentity{}, err
	}
	return id, nil
}

// Diff names what differs between the hashed identity want and got ("" when they are equal).
func (want FileIdentity) Diff(got FileIdentity) string {
	switch {
	case got.Dev != want.Dev || got.Inode != want.Inode:
		return fmt.Sprintf("the model file was replaced (device %d inode %d, verified device %d inode %d)", got.Dev, got.Inode, want.Dev, want.Inode)
	case got.Size != want.Size:
		return fmt.Sprintf("the model file changed size (%d bytes, verified %d)", got.Size, want.Size)
	case got.Mtime != want.Mtime:
		return fmt.Sprintf("the model file was modified (mtime %s, verified %s)",
			time.Unix(0, got.Mtime).UTC().Format(time.RFC3339Nano), time.Unix(0, want.Mtime).UTC().Format(time.RFC3339Nano))
	}
	return ""
}
