#!/usr/bin/env node
// `npx @ferrite-agent/ferrite acp`: runs the Ferrite binary built for this platform. npm installs
// exactly one of the per-platform packages (each lists its `os` and `cpu`) as an optional
// dependency of this one; this file finds it and hands over stdin, stdout, stderr, the
// arguments, signals and the exit status. Nothing is downloaded at install or run time.
'use strict';

const { spawn } = require('node:child_process');

const platform = `${process.platform}-${process.arch}`;
const pkg = `@ferrite-agent/ferrite-${platform}`;
const exe = process.platform === 'win32' ? 'ferrite.exe' : 'ferrite';

let bin;
try {
  bin = require.resolve(`${pkg}/bin/${exe}`);
} catch {
  process.stderr.write(
    `ferrite: no build for ${platform} was installed (${pkg}).\n` +
      'Ferrite ships for linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64 and ' +
      'win32-arm64; reinstall without --no-optional (or --omit=optional), or install a ' +
      'release archive (README.md).\n',
  );
  process.exit(1);
}

const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });
// An editor stops its agent with a signal to this process: pass it on, so the agent can end
// its commands and flush its session log instead of being orphaned.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (err) => {
  process.stderr.write(`ferrite: could not start ${bin}: ${err.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
