#!/usr/bin/env bash
# bump.sh: move every client SDK the conformance suites drive to its newest
# release, then rerun the suites.
#
#   - Node (clients/node): openai, @anthropic-ai/sdk, @langchain/openai and
#     @langchain/anthropic at @latest; @langchain/core at the newest release
#     both LangChain packages' peer ranges accept; zod at its newest 4.x. Each
#     is pinned to an exact version in package.json and package-lock.json.
#   - Go (go.mod): github.com/openai/openai-go/v3 and
#     github.com/anthropics/anthropic-sdk-go/v2 at @latest, then go mod tidy.
#
# It prints the versions before and after, warns when a Go SDK has a newer
# major version (a new import path, which @latest never reaches: moving to it
# is done by hand), then runs every suite that drives a real SDK client:
#   go test ./internal/server -run 'TestNodeClients|TestConformance|SDK' -count=1
# and, whole, every other package whose tests import a Go SDK (the dialects'
# and idempotency's sdk_test.go, the mocks).
# Runnable from any directory. Nothing is committed.
set -euo pipefail

NODE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$NODE_DIR/../.." && pwd)"

NODE_PKGS=(openai @anthropic-ai/sdk @langchain/openai @langchain/anthropic @langchain/core zod)
GO_MODS=(github.com/openai/openai-go/v3 github.com/anthropics/anthropic-sdk-go/v2)

node_versions() {
  (cd "$NODE_DIR" && node -e '
    const pkg = require("./package.json");
    for (const name of process.argv.slice(1)) {
      let installed = "(not installed)";
      try { installed = require(`./node_modules/${name}/package.json`).version; } catch {}
      console.log(`  ${name.padEnd(24)} package.json ${String((pkg.dependencies || {})[name]).padEnd(10)} installed ${installed}`);
    }' "${NODE_PKGS[@]}")
}

go_versions() {
  (cd "$ROOT" && for m in "${GO_MODS[@]}"; do
    printf '  %-42s %s\n' "$m" "$(go list -m -f '{{.Version}}' "$m" 2>/dev/null || echo '(not required)')"
  done)
}

echo "== versions before"
node_versions
go_versions

echo "== npm: newest releases"
# zod stays on its newest 4.x (the SDKs' peer ranges); @langchain/core is the
# newest release inside both LangChain packages' peer ranges, read from the
# LangChain releases being installed.
core="$(cd "$NODE_DIR" && node -e '
  const { execFileSync } = require("node:child_process");
  const npm = (...a) => JSON.parse(execFileSync("npm", ["view", ...a, "--json"], { encoding: "utf8" }) || "null");
  const list = (x) => (x == null ? [] : [].concat(x));
  let common = null;
  for (const p of ["@langchain/openai", "@langchain/anthropic"]) {
    const range = (npm(`${p}@latest`, "peerDependencies") || {})["@langchain/core"];
    if (!range) continue;
    const ok = list(npm(`@langchain/core@${range}`, "version"));
    console.error(`  ${p}@latest wants @langchain/core ${range}`);
    common = common === null ? ok : common.filter((v) => ok.includes(v));
  }
  const num = (v) => v.split(/[.+-]/).slice(0, 3).map(Number);
  const cmp = (a, b) => { const x = num(a), y = num(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; };
  if (common === null) { console.log("latest"); process.exit(0); }
  const stable = common.filter((v) => !v.includes("-")).sort(cmp);
  if (stable.length === 0) { console.error("no @langchain/core release satisfies both peer ranges"); process.exit(1); }
  console.log(stable.at(-1));
')"
echo "  @langchain/core -> $core"
specs=(openai@latest @anthropic-ai/sdk@latest @langchain/openai@latest @langchain/anthropic@latest "@langchain/core@$core" zod@4)
# --save-exact pins the resolved versions; engine-strict=false and
# omit-lockfile-registry-resolved come from clients/node/.npmrc.
(cd "$NODE_DIR" && npm install --save-exact --no-audit --no-fund "${specs[@]}")
(cd "$NODE_DIR" && npm ls --depth=0 >/dev/null) || {
  echo "npm ls reports unmet or invalid dependencies (see above); fix the pins before committing" >&2
  exit 1
}

echo "== go: newest releases"
(cd "$ROOT" && go get "${GO_MODS[@]/%/@latest}" && go mod tidy)

echo "== versions after"
node_versions
go_versions

# A newer major version is a different module path: @latest on the old path
# never reaches it, so say so rather than report "newest" silently.
(cd "$ROOT" && for m in "${GO_MODS[@]}"; do
  if [[ $m =~ ^(.*)/v([0-9]+)$ ]]; then next="${BASH_REMATCH[1]}/v$((BASH_REMATCH[2] + 1))"; else next="$m/v2"; fi
  if v="$(go list -m -f '{{.Version}}' "$next@latest" 2>/dev/null)"; then
    echo "  WARNING: $next $v exists; $m@latest stays on the old major (move by hand: import paths change)" >&2
  fi
done)

echo "== SDK suites"
cd "$ROOT"
# Packages other than internal/server whose tests import a Go SDK; found
# afresh each run so a new sdk_test.go is never left out.
mapfile -t sdk_pkgs < <(grep -rlE 'openai/openai-go|anthropics/anthropic-sdk-go' --include='*_test.go' internal cmd |
  xargs -n1 dirname | sort -u | grep -vx 'internal/server' | sed 's|^|./|')
SPILLWAY_TEST_NODE=1 go test ./internal/server -run 'TestNodeClients|TestConformance|SDK' -count=1
if ((${#sdk_pkgs[@]})); then
  go test -count=1 "${sdk_pkgs[@]}"
fi
