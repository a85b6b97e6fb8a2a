#!/usr/bin/env python3
"""Where a fresh `ferrite acp`'s resident memory is: spawn it, answer `initialize` and
`session/new`, then sum `Rss:` of /proc/<pid>/smaps per mapping (the 15 largest, and the total).

    python3 bench/smaps.py target/release/ferrite
    sync; echo 3 > /proc/sys/vm/drop_caches; python3 bench/smaps.py <bin>   # cold page cache

Linux only. Compare binaries with the page cache dropped before each run (bench/README.md).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
binp = sys.argv[1]
home = tempfile.mkdtemp()
env = {"PATH": os.environ["PATH"], "HOME": home, "FERRITE_HOME": home, "FERRITE_MODEL": "ollama/bench"}
p = subprocess.Popen([binp, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
def req(i, m, params):
    p.stdin.write((json.dumps({"jsonrpc":"2.0","id":i,"method":m,"params":params})+"\n").encode()); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        d = json.loads(line)
        if d.get("id") == i: return d
req(1, "initialize", {"protocolVersion":1, "clientCapabilities":{}})
req(2, "session/new", {"cwd": "/tmp", "mcpServers": []})
time.sleep(0.2)
cur=None; agg={}
for line in open(f"/proc/{p.pid}/smaps"):
    parts=line.split()
    if len(parts)>=5 and '-' in parts[0] and ':' not in parts[0]:
        name = parts[5] if len(parts)>5 else "[anon]"
        cur=(name, parts[1])
    elif parts[0]=="Rss:":
        agg[cur]=agg.get(cur,0)+int(parts[1])
tot=sum(agg.values())
for k,v in sorted(agg.items(), key=lambda x:-x[1])[:15]:
    print(f"{v:8d} kB  {k[1]}  {k[0]}")
print("total", tot)
p.kill()
shutil.rmtree(home, ignore_errors=True)
