// The npm registry reachable from this project's machines lacks some platform builds that the CLIs
// list as optionalDependencies (e.g. opencode-darwin-arm64, @teddyzhu/clipboard-win32-x64-msvc: 404).
// `npm install` then leaves them out of package-lock.json, and `npm ci` refuses such a lock
// ("Missing: opencode-darwin-arm64@ from lock file"). This adds a lock entry for each missing one,
// carrying the os/cpu/libc its name says, so `npm ci` sees a complete lock and skips them on this
// platform as it skips every other foreign build. Run after `npm install --package-lock-only`.
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('./package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const pkgs = lock.packages;

function platformOf(name) {
  const n = name.toLowerCase();
  const os = /darwin/.test(n) ? 'darwin' : /win32|windows/.test(n) ? 'win32' : /linux/.test(n) ? 'linux' : null;
  const cpu = /arm64|aarch64/.test(n) ? 'arm64' : /x64|x86_64/.test(n) ? 'x64' : null;
  if (!os || !cpu) return null;
  const entry = { os: [os], cpu: [cpu] };
  if (os === 'linux') entry.libc = [/musl/.test(n) ? 'musl' : 'glibc'];
  return entry;
}

// Where npm would look for `dep` required from the package at `from`: its own node_modules, then up.
function resolved(from, dep) {
  for (let dir = from; ; ) {
    const key = (dir ? dir + '/' : '') + 'node_modules/' + dep;
    if (pkgs[key]) return true;
    if (!dir) return false;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

let added = 0;
for (const [from, meta] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    if (resolved(from, dep)) continue;
    const platform = platformOf(dep);
    if (!platform) throw new Error(`${from || '(root)'}: optional ${dep}@${version} is missing and its name names no platform`);
    pkgs['node_modules/' + dep] = { version, optional: true, ...platform };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n');
console.log(`fill_lock: added ${added} entries`);
