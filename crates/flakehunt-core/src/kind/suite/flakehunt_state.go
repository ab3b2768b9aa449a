// flakehunt's state test, for the state search of a Go suite. flakehunt adds it to the
// package's external test package through `go test -overlay` (it is never written into the
// package's directory) and runs it after the tests `-test.run` selects: the external test
// package's tests run after the package's own, and this file's name sorts after the others'.
// It writes the process's environment and working directory, as those tests leave them, as
// JSON into the file $FLAKEHUNT_STATE_OUT names.

package PACKAGE_test

import (
	"encoding/json"
	"os"
	"sort"
	"testing"
)

func TestFlakehuntProcessState(t *testing.T) {
	out := os.Getenv("FLAKEHUNT_STATE_OUT")
	if out == "" {
		t.Skip("run by flakehunt's state search only")
	}
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "<" + err.Error() + ">"
	}
	env := os.Environ()
	sort.Strings(env)
	data, err := json.Marshal(map[string]interface{}{"env": env, "cwd": cwd})
	if err == nil {
		err = os.WriteFile(out, data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
