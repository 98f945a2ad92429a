# boxcar ui --no-auth serves only requests whose Host names it by a
# loopback name or address (DNS rebinding: a page of attacker.example,
# rebound to 127.0.0.1, sends "Host: attacker.example"), with the port it
# listens on; names that merely begin like one are refused (421).
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_ui_host
log="$BOXCAR_DEV/test-logs/ui_host.log"
env -u BOXCAR_UI_TOKEN "$BOXCAR" ui --listen 127.0.0.1:0 --no-auth >"$log" 2>&1 &
_bg_pids+=($!)
wait_for "boxcar ui listens" 10 grep -q 'event=ui.listening' "$log"
port=$(sed -n 's/.*event=ui.listening.* port=\([0-9]*\).*/\1/p' "$log")
url="http://127.0.0.1:$port/"
host() { curl -s -o /dev/null -w '%{http_code}' -H "Host: $1" "$url"; }
is "Host: 127.0.0.1:PORT is served" "$(host "127.0.0.1:$port")" 200
is "Host: localhost:PORT is served" "$(host "localhost:$port")" 200
is "Host: [::1]:PORT is served" "$(host "[::1]:$port")" 200
is "Host: 127.1.2.3:PORT (a loopback address) is served" "$(host "127.1.2.3:$port")" 200
is "Host: localhost (no port) is served" "$(host localhost)" 200
is "Host: 127.x.attacker.example:PORT is refused" "$(host "127.x.attacker.example:$port")" 421
is "Host: 127.0.0.1.evil.example is refused" "$(host 127.0.0.1.evil.example)" 421
is "Host: localhost.evil.example is refused" "$(host localhost.evil.example)" 421
is "Host: evil.example:PORT is refused" "$(host "evil.example:$port")" 421
is "Host: localhost with another port is refused" "$(host "localhost:$((port == 65535 ? 1 : port + 1))")" 421
is "no Host header (HTTP/1.0) is refused" \
   "$(curl -s -o /dev/null -w '%{http_code}' --http1.0 -H 'Host:' "$url")" 421
is "the refusal names why" "$(curl -s -H 'Host: 127.0.0.1.evil.example' "$url")" \
   "without auth only a loopback Host is served"
tap_done
