package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// dataDir is the user's folder for application data: %LocalAppData% on Windows, ~/Library/Application
// Support on macOS, $XDG_DATA_HOME or ~/.local/share elsewhere (the XDG base directory specification).
func dataDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%LocalAppData% is not set")
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support"), nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share"), nil
}
