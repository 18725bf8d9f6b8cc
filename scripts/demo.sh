#!/usr/bin/env bash
# `make demo`: start the reference server, then walk a merchant's path with the paysdk CLI:
# a merchant client, a payment link paid with an approving test card, the callback it produced (received
# by a local verifying listener), and an alternative payment whose QR code is saved to out/demo-qr.png.
# Everything runs against a throw-away database and profile directory; nothing of yours is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
work=$(mktemp -d -t paysdk-demo-XXXXXX)
mkdir -p out
free_port() { "$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port); LPORT=$(free_port)
export PAYSDK_CONFIG_DIR="$work/config" PAYSDK_BASE_URL="http://127.0.0.1:$PORT" PAYSDK_PROFILE=demo
# A control token, as a team sharing a sandbox would set one (docs/sharing-a-sandbox.md): the server
# requires it on every /_sandbox call, and the CLI sends it from this variable.
PAYSDK_CONTROL_TOKEN=$("$BIN/python" -c 'import secrets; print(secrets.token_urlsafe(32))')
export PAYSDK_CONTROL_TOKEN
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }
field() { "$BIN/python" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

step "Start the reference server on $PAYSDK_BASE_URL"
"$BIN/paysdk" serve --port "$PORT" --db "sqlite:///$work/demo.db" >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do "$BIN/paysdk" sandbox health >/dev/null 2>&1 && break; sleep 0.1; done
show "$BIN/paysdk" -o table sandbox health

step "Create a merchant client whose callbacks go to a local listener (its token goes to the profile)"
show "$BIN/paysdk" -o table sandbox clients create --slug demo-store --callback-url "http://127.0.0.1:$LPORT/callbacks" --three-ds --save-profile

step "Listen for callbacks: verify the static header (read in full through the reveal call), deduplicate on eventId"
"$BIN/paysdk" -o table callbacks listen --port "$LPORT" --sandbox-client demo-store --max-events 1 --timeout 60 >"$work/events.txt" &
listener=$!
for _ in $(seq 1 50); do "$BIN/python" -c "import socket; socket.create_connection(('127.0.0.1', $LPORT), 0.2)" 2>/dev/null && break; sleep 0.1; done

step "Create a payment link"
link=$("$BIN/paysdk" -o json links create --amount 125.50 --user-id +50255550123 --channel wa --client demo-store --external-id order-1001)
echo "$link"
uid=$(printf '%s' "$link" | field uid)

step "Pay it with the approving test card (the checkout completed headlessly)"
show "$BIN/paysdk" -o table sandbox pay "$uid" --card 4242424242424242

step "The callback that arrived at the listener"
wait "$listener" || { echo "the listener did not receive the callback" >&2; exit 1; }
cat "$work/events.txt"
show "$BIN/paysdk" -o table sandbox callbacks --uid "$uid"

step "Create an alternative payment and save its akisiQR code"
alt=$("$BIN/paysdk" -o json alt create --amount 80.25 --channel app --client demo-store --user-id +50255550123)
echo "$alt"
alt_uid=$(printf '%s' "$alt" | field uid)
show "$BIN/paysdk" -o table alt process "$alt_uid" --processor akisiQR --qr-out out/demo-qr.png

step "A whole flow in one command: a subscription's renewals fail until it is suspended (the virtual clock moves)"
show "$BIN/paysdk" -o table trigger subscription-suspended

step "Done"
echo "QR code saved to out/demo-qr.png" >&2
echo "While a paysdk serve runs, the sandbox console shows all of this: $PAYSDK_BASE_URL/_sandbox/console" >&2
