#!/usr/bin/python3
"""MultiTree on the 4x4 torus: the authors' simulator beside incsim.

Runs Huang et al.'s own simulator (ISCA 2021, github.com/farabimahmud/accelerator:
BookSim2 as a pybind11 module driven by src/simulate.py) and incsim on the same
all-reduces, and writes <out>/multitree-authors.{csv,md,png}.

  scripts/figures/multitree-authors.py --authors PATH [--incsim BIN]
      [--sizes 32K,128K,256K,1M,4M] [--out docs/figures] [--jobs 2]
  scripts/figures/multitree-authors.py --reuse [--incsim BIN] [--out ...]

PATH is a checkout of the authors' repository; this script fetches nothing.
The authors' runs take about 25 minutes on 2 cores, incsim's seconds:
--reuse takes the authors' columns from <out>/multitree-authors.csv and
reruns incsim only.

incsim runs twice: with the MultiTree figures' settings (a VC per packet)
and with the authors' (FIGURES + AUTHORS_SETTINGS below), each named there.
Settings, all from that checkout (paths under it):
- Options per algorithm: utils/run_torus_bandwidth.sh (the paper's bandwidth
  figure, results/isca2021/bandwidth): ring and dtree "--kary 2 --radix 1
  --message-size 256" on torus4x4express.cfg (one NI per node); ring2d "--kary 5
  --radix 4 --message-size 256" and MultiTree "--kary 5 --radix 4
  --strict-schedule --prioritize-schedule --estimate-lockstep" on
  ctorus4x4multitree.cfg (four NIs per node), with --message-size 256 (beta,
  packet-based) or 0 (delta, message-based: one message per flow); all with
  --message-buffer-size 32 --sub-message-size 256 --only-allreduce
  --synthetic-data-size <bytes/4>.  utils/topology_bandwidth/torus.sh uses the
  same options with torus44express.cfg / ctorus44multitree.cfg, which differ
  from the 4x4 files only in the DSENT paths that BOOKSIMSRC overrides
  (src/booksim2/src/booksim_wrapper.cpp:20).
- Size: src/model.py:9 takes --synthetic-data-size as the parameter count and
  src/hmc.py:50 sets 4 bytes per parameter, so bytes per node = 4 x params.
- Time: simulate.py:282 "pure communication" = all-reduce cycles less the
  largest per-node reduction compute (hmc.py aggregate, npu.py:18); it is what
  utils/topology_bandwidth/plot_torus_bandwidth.py:53 plots.  simulate.py:287
  doubles ring2d's cycles (a "workaround"); the CSV keeps both.  1 cycle = 1 ns.
- Flits of 16 B: channel_width = 128 bits (booksim_config.cpp:330).  A 256 B
  sub-message is 16 flits, plus 1 head flit if it starts a packet
  (scaletrafficmanager.cpp:59-61).  Channel latency 150 cycles for flits and
  credits (networks/kncube.cpp:120, networks/ckncube.cpp:80).
"""
import argparse, concurrent.futures as cf, csv, json, os, shutil, subprocess
import sys, tempfile, time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'scripts'))
from incsim_campaign.campaign import format_size as label, parse_size  # noqa: E402

ALGS = ['ring', 'ring2d', 'dtree', 'multitree', 'multitree-msg']
INCSIM_NAME = {'dtree': 'dbtree'}  # incsim's name for the double binary tree
MT = ['--strict-schedule', '--prioritize-schedule', '--estimate-lockstep']
# incsim's options: the MultiTree figures' (scripts/campaigns/multitree-fig9-*.yaml),
# and the authors' simulator's settings on top of them.
FIGURES = ['-c', 'switch.vc_alloc=packet']
AUTHORS_SETTINGS = [
    '-c', 'nic.link_latency_ns=1',  # injection and ejection channels of 1 cycle (kncube.cpp:167-168)
    '-c', 'switch.latency_ns=3',  # routing 0, VC and switch allocation 1, traversal 1 (the cfg, booksim_config.cpp:146)
    '-c', 'gpu.mem_latency_cycles=0', '-c', 'gpu.mem_jitter_cycles=0',  # the NI reads no memory (hmc.py)
    # a flow goes to the first free NI, free again once its messages are in its 32-message buffer
    # (hmc.py: reduce_scatter_evaluate, send_reduce_message_update; --message-buffer-size 32)
    '-c', 'nic.interface_choice=first-free',
]
AUTHORS_PER_ALG = {
    'ring': ['-c', 'nic.interfaces=1'],  # one NI (torus4x4express.cfg, --radix 1)
    'dtree': ['-c', 'nic.interfaces=1', '-c', 'dbtree.pieces=8'],  # and 8 chunks per tree (dtree_allreduce.py)
}
# (simulate.py --allreduce, booksim config, options): utils/run_torus_bandwidth.sh
AUTHORS = {
    'ring': ('ring', 'torus44express.cfg', ['--kary', '2', '--radix', '1', '--message-size', '256']),
    'dtree': ('dtree', 'torus44express.cfg', ['--kary', '2', '--radix', '1', '--message-size', '256']),
    'ring2d': ('ring2d', 'ctorus44multitree.cfg', ['--kary', '5', '--radix', '4', '--message-size', '256']),
    'multitree': ('multitree', 'ctorus44multitree.cfg',
                  ['--kary', '5', '--radix', '4', '--message-size', '256'] + MT),
    'multitree-msg': ('multitree', 'ctorus44multitree.cfg',
                      ['--kary', '5', '--radix', '4', '--message-size', '0'] + MT),
}
# Debian packages: the module's build (Makefile runs `python3 -m pybind11 --includes`
# and includes Python.h), SCALE-Sim's imports (numpy, tqdm), and our plot.
PACKAGES = ['g++', 'make', 'flex', 'bison', 'pybind11-dev', 'python3-pybind11', 'python3-dev',
            'python3-numpy', 'python3-tqdm', 'python3-matplotlib']


def missing_packages():
    if not shutil.which('dpkg-query'):
        return []  # not Debian: let the build say what is missing
    out = subprocess.run(['dpkg-query', '-W', '-f=${Package} ${Status}\n'] + PACKAGES,
                         capture_output=True, text=True).stdout
    installed = {l.split()[0] for l in out.splitlines() if l.endswith(' installed')}
    return [p for p in PACKAGES if p not in installed]


def authors_env(authors):
    env = dict(os.environ)
    # Debian's python3 must come first: the Makefile and simulate.py use the
    # Debian packages (pybind11, numpy, tqdm).
    env['PATH'] = '/usr/bin:' + env.get('PATH', '')
    env['SIMHOME'] = authors
    env['BOOKSIMSRC'] = os.path.join(authors, 'src', 'booksim2', 'src')  # read by DSENT
    # Events of a cycle run in the order of Python sets of strings and objects
    # (src/eventq.py), so a run's time moves by a few percent with the string
    # hash seed and the heap's addresses; fix both (setarch -R in run_authors).
    env['PYTHONHASHSEED'] = '0'
    return env


def build_authors(authors, jobs):
    src = os.path.join(authors, 'src', 'booksim2', 'src')
    if os.path.exists(os.path.join(src, 'pybooksim.so')):
        return None
    print('building the authors\' booksim module (make lib in %s)' % src, flush=True)
    r = subprocess.run(['make', '-j%d' % jobs, 'lib'], cwd=src, env=authors_env(authors),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ['no output'])[-1]
    return None


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else 'no output'


def run_authors(authors, alg, size):
    """One simulate.py run; returns (printed us, undoubled us, wall s)."""
    allreduce, cfg, opts = AUTHORS[alg]
    tmp = tempfile.mkdtemp(prefix='mt-authors-')
    try:
        no_aslr = ['setarch', os.uname().machine, '-R'] if shutil.which('setarch') else []
        cmd = no_aslr + [
            '/usr/bin/python3', os.path.join(authors, 'src', 'simulate.py'),
            '--num-hmcs', '16', '--run-name', 'run', '--outdir', tmp,
            '--booksim-config', os.path.join(authors, 'src', 'booksim2', 'runfiles', cfg),
            '--booksim-network', 'torus', '--allreduce', allreduce,
            '--message-buffer-size', '32', '--sub-message-size', '256',
            '--only-allreduce', '--synthetic-data-size', str(size // 4)] + opts
        t0 = time.time()
        r = subprocess.run(cmd, cwd=tmp, env=authors_env(authors), capture_output=True, text=True)
        wall = time.time() - t0
        results = [f for f in os.listdir(tmp) if f.endswith('.json')]
        if r.returncode != 0 or len(results) != 1:
            raise RuntimeError(last_line(r.stderr or r.stdout))
        with open(os.path.join(tmp, results[0])) as f:
            cycles = json.load(f)['results']['performance']['allreduce']['communication']
        undoubled = cycles / 2 if alg == 'ring2d' else cycles
        return cycles / 1000.0, undoubled / 1000.0, wall  # cycles at 1 GHz -> us
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_incsim(binary, alg, sizes, options):
    """incsim's CSV for one algorithm at all sizes: {size_bytes: us}."""
    with tempfile.TemporaryDirectory(prefix='mt-incsim-') as tmp:
        out = os.path.join(tmp, 'incsim.csv')
        r = subprocess.run([binary, '--platform', 'torus', '--dims', '4x4',
                            '--algorithm', INCSIM_NAME.get(alg, alg),
                            '--sizes', ','.join(str(s) for s in sizes),
                            '--csv', out, '--quiet'] + options, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(last_line(r.stderr or r.stdout))
        with open(out) as f:
            return {int(row['size_bytes']): float(row['time_us']) for row in csv.DictReader(f)}


def plot(rows, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for i, alg in enumerate(ALGS):
        for key, style in (('authors_us', '--'), ('incsim_us', ':'), ('incsim_authors_us', '-')):
            # algbw as the paper's Fig. 9 plots it: data per node / time, GB/s
            pts = [(r['size_bytes'], r['size_bytes'] / (r[key] * 1e3))
                   for r in rows if r['algorithm'] == alg and r[key] != '']
            if pts:
                ax.plot(*zip(*pts), style, color='C%d' % i, marker='o',
                        label=alg if style == '-' else None)
    ax.plot([], [], 'k--', label='authors\' simulator')
    ax.plot([], [], 'k:', label='incsim, the figures\' settings')
    ax.plot([], [], 'k-', label='incsim, the authors\' settings')
    ax.set_xscale('log', base=2)
    sizes = sorted({r['size_bytes'] for r in rows})
    ax.set_xticks(sizes)
    ax.set_xticklabels([label(s) for s in sizes])
    ax.set_xlabel('all-reduce data per node (bytes)')
    ax.set_ylabel('algbw = size / time (GB/s, 10^9 B/s)')
    ax.set_title('All-reduce on the 4x4 torus')
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def fmt(v):
    return '' if v == '' else '%.2f' % v


def read_authors(path):
    """The authors' columns of an earlier run's CSV: {(alg, size): (us, undoubled us, 0)}."""
    with open(path) as f:
        return {(r['algorithm'], int(r['size_bytes'])): (float(r['authors_us']), float(r['authors_undoubled_us']), 0)
                for r in csv.DictReader(f) if r['authors_us']}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--authors', help='checkout of farabimahmud/accelerator')
    p.add_argument('--reuse', action='store_true', help="the authors' columns from <out>/multitree-authors.csv")
    p.add_argument('--incsim', default=os.path.join(REPO, 'build', 'incsim'))
    p.add_argument('--sizes', default='32K,128K,256K,1M,4M', help='bytes per node')
    p.add_argument('--out', default=os.path.join(REPO, 'docs', 'figures'))
    p.add_argument('--jobs', type=int, default=2)
    a = p.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(',')]
    csv_path = os.path.join(a.out, 'multitree-authors.csv')
    authors_res = {}
    if a.reuse:
        if not os.path.exists(csv_path):
            sys.exit('--reuse needs an earlier run\'s %s, and there is none.' % csv_path)
        authors_res = read_authors(csv_path)
    else:
        if not a.authors:
            sys.exit('Give --authors PATH (a checkout of farabimahmud/accelerator), or --reuse.')
        authors = os.path.abspath(a.authors)
        if not os.path.exists(os.path.join(authors, 'src', 'simulate.py')):
            sys.exit('%s is not a checkout of farabimahmud/accelerator (no src/simulate.py).' % authors)
        missing = missing_packages()
        if missing:
            sys.exit('Missing Debian packages %s; install them with: apt-get install -y %s'
                     % (', '.join(missing), ' '.join(missing)))
        err = build_authors(authors, a.jobs)
        if err:
            sys.exit('Building the authors\' booksim module (make lib) failed: %s' % err)

    incsim_res, failures = {}, []
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        # incsim is quick; the authors' runs go largest first to even out the jobs.
        futs = {}
        for alg in ALGS:
            futs[pool.submit(run_incsim, a.incsim, alg, sizes, FIGURES)] = ('incsim', alg, 'figures')
            options = FIGURES + AUTHORS_SETTINGS + AUTHORS_PER_ALG.get(alg, [])
            futs[pool.submit(run_incsim, a.incsim, alg, sizes, options)] = ('incsim', alg, 'authors')
        for size in sorted(sizes, reverse=True) if not a.reuse else []:
            for alg in ALGS:
                futs[pool.submit(run_authors, authors, alg, size)] = ('authors', alg, size)
        for fut in cf.as_completed(futs):
            who, alg, size = futs[fut]
            try:
                res = fut.result()
            except Exception as e:
                what = ('with the %s settings' % size) if who == 'incsim' else 'at %s' % label(size)
                failures.append('%s\'s %s %s failed: %s' % (who, alg, what, e))
                print(failures[-1], flush=True)
                continue
            if who == 'incsim':
                incsim_res[alg, size] = res
            else:
                authors_res[alg, size] = res
                print('authors\' %s at %s: %.2f us, %.0f s wall' % (alg, label(size), res[0], res[2]),
                      flush=True)

    rows = []
    for alg in ALGS:
        for size in sizes:
            au, und, _ = authors_res.get((alg, size), ('', '', 0))
            inc = {}
            for settings in ('figures', 'authors'):
                inc[settings] = incsim_res.get((alg, settings), {}).get(size, '')
                if (alg, settings) in incsim_res and inc[settings] == '':
                    failures.append('incsim\'s %s at %s failed: no row in its CSV' % (alg, label(size)))
                    print(failures[-1], flush=True)
            ratio = lambda v: v / au if au != '' and v != '' else ''  # noqa: E731
            rows.append(dict(algorithm=alg, size_bytes=size, authors_us=au, authors_undoubled_us=und,
                             incsim_us=inc['figures'], incsim_over_authors=ratio(inc['figures']),
                             incsim_authors_us=inc['authors'], incsim_authors_over_authors=ratio(inc['authors'])))

    os.makedirs(a.out, exist_ok=True)
    cols = ['algorithm', 'size_bytes', 'authors_us', 'authors_undoubled_us', 'incsim_us',
            'incsim_over_authors', 'incsim_authors_us', 'incsim_authors_over_authors']
    with open(csv_path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, 'multitree-authors.md'), 'w') as f:
        f.write('| algorithm | size per node | authors (us) | authors, undoubled (us) | incsim (us) '
                '| over authors | incsim, authors\' settings (us) | over authors |\n'
                '|---|---:|---:|---:|---:|---:|---:|---:|\n')
        for r in rows:
            f.write('| %s | %s | %s | %s | %s | %s | %s | %s |\n' % (
                r['algorithm'], label(r['size_bytes']), fmt(r['authors_us']),
                fmt(r['authors_undoubled_us']), fmt(r['incsim_us']), fmt(r['incsim_over_authors']),
                fmt(r['incsim_authors_us']), fmt(r['incsim_authors_over_authors'])))
    plot(rows, os.path.join(a.out, 'multitree-authors.png'))
    print('wrote %s/multitree-authors.{csv,md,png}' % a.out)
    if failures:
        print('%d run(s) failed.' % len(failures))
        sys.exit(1)


if __name__ == '__main__':
    main()
