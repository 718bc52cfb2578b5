#!/usr/bin/env bash
# Regenerates every number and plot in docs/results.md:
#   make build && scripts/run_results.sh [section...]     (sections: exact auto churn fmnist mlp scale nodes gamma leader cltk lgc; default all)
# RESULTS_DIR=DIR writes elsewhere (e.g. to compare a new build with docs/results: scripts/compare_results.py DIR).
# Results land in docs/results/*.json and *.png; scripts/results_tables.py prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
G=${GOSSIPD:-build/release/daemon/gossipd}
OUT=${RESULTS_DIR:-docs/results}
PLOT=scripts/plot_results.py
mkdir -p "$OUT"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(exact auto churn fmnist mlp scale nodes gamma leader cltk lgc)

run() {  # run NAME CONFIG [--set ...]   (CONFIG "" : the defaults and the --set lines only)
  local name=$1 config=$2
  shift 2
  echo "== $name"
  "$G" sim ${config:+--config "$config"} "$@" --out "$OUT/$name.json" 2>&1 | grep -v '^round ' | tail -n 3
}

for s in "${sections[@]}"; do
  case $s in
  exact)
    E=experiments/exact_l1.toml
    run exact_prox_lead_full "$E"
    run exact_prox_lead_lsvrg "$E" --set algorithm.estimator=lsvrg --set algorithm.batch=1 --set algorithm.lr=0.1 --set algorithm.rounds=6000 --set sim.eval_every=100
    run exact_prox_lead_saga "$E" --set algorithm.estimator=saga --set algorithm.batch=1 --set algorithm.lr=0.1 --set algorithm.rounds=6000 --set sim.eval_every=100
    run exact_prox_lead_sgd "$E" --set algorithm.estimator=sgd --set algorithm.batch=1 --set algorithm.lr=0.1 --set algorithm.rounds=6000 --set sim.eval_every=100
    S=(--set model.l1=0)  # smooth problem for the methods without a prox
    run smooth_nids "$E" "${S[@]}" --set algorithm.name=nids --set compressor.name=fp32
    run smooth_lead "$E" "${S[@]}" --set algorithm.name=lead
    run smooth_dpsgd "$E" "${S[@]}" --set algorithm.name=dpsgd --set compressor.name=fp32
    run smooth_choco "$E" "${S[@]}" --set algorithm.name=choco --set algorithm.gamma=0.5 --set compressor.name=qsgd --set compressor.levels=16
    run smooth_deepsqueeze "$E" "${S[@]}" --set algorithm.name=deepsqueeze --set compressor.name=qsgd --set compressor.levels=16
    $PLOT "$OUT"/smooth_{nids,lead,dpsgd,choco,deepsqueeze}.json -o "$OUT/smooth.png" --title "smooth logistic, 8-node ring"
    $PLOT "$OUT"/exact_prox_lead_{full,lsvrg,saga,sgd}.json -o "$OUT/exact_prox_lead.png" \
      --labels "full gradient" LSVRG SAGA SGD --title "Prox-LEAD 2-bit, L1 logistic, 8-node ring"
    ;;
  auto)  # algorithm.lr_auto: Prox-LEAD 2-bit with no lr on §1's problems and on CSV sets it was never tuned on
    E=experiments/exact_l1.toml
    A=(--set algorithm.lr_auto=true --set sim.eval_every=250)
    run auto_exact_full "$E" "${A[@]}" --set algorithm.rounds=3000
    run auto_exact_lsvrg "$E" "${A[@]}" --set algorithm.estimator=lsvrg --set algorithm.batch=1 --set algorithm.rounds=20000 --set sim.eval_every=1000
    run auto_exact_saga "$E" "${A[@]}" --set algorithm.estimator=saga --set algorithm.batch=1 --set algorithm.rounds=20000 --set sim.eval_every=1000
    run auto_smooth_lead "$E" "${A[@]}" --set model.l1=0 --set algorithm.name=lead --set algorithm.rounds=3000
    SK=/usr/lib/python3/dist-packages/sklearn/datasets/data  # Debian's python3-sklearn ships these CSVs
    [ -f "$SK/breast_cancer.csv" ] || { echo "auto: apt-get install python3-sklearn for its CSV data sets" >&2; exit 1; }
    C=(--set data.format=csv --set data.header=true --set data.label_column=-1 --set data.scaling=standardize
       --set model.l1=0.005 --set model.l2=0.01 --set cluster.nodes=8 --set cluster.topology=ring
       --set algorithm.name=prox_lead --set compressor.name=lead --set compressor.bits=2 --set algorithm.estimator=full
       --set algorithm.alpha=0.5 --set algorithm.gamma=1.0 --set algorithm.rounds=10000 --set sim.eval_every=500)
    run auto_csv_breast_cancer "" "${A[@]}" "${C[@]}" --set data.train=$SK/breast_cancer.csv --set model.kind=logistic
    run auto_csv_wine "" "${A[@]}" "${C[@]}" --set data.train=$SK/wine_data.csv --set model.kind=softmax
    ;;
  churn)
    E=experiments/exact_l1.toml
    run churn_prox_lead "$E" --set algorithm.rounds=4000 --set 'faults.crash=[{node=3,round=300},{node=5,round=1200},{node=6,round=1200}]'
    run churn_join_prox_lead "$E" --set algorithm.rounds=3000 --set 'faults.join=[{node=8,round=600}]'
    $PLOT "$OUT"/churn_prox_lead.json "$OUT"/churn_join_prox_lead.json -o "$OUT/churn.png" \
      --labels "crash 3 @300, 5+6 @1200" "join 8 @600" --title "Prox-LEAD 2-bit under churn"
    ;;
  fmnist | mlp)
    F=experiments/fmnist_softmax.toml
    M=()
    [ "$s" = mlp ] && M=(--set model.kind=mlp --set 'model.hidden=[128]')
    TK=(--set compressor.name=topk --set compressor.ratio=0.01)
    Q4=(--set compressor.name=qsgd --set compressor.levels=7 --set compressor.block=512)
    run "${s}_central" "$F" "${M[@]}" --set cluster.nodes=1 --set algorithm.batch=512
    run "${s}_dpsgd" "$F" "${M[@]}"
    run "${s}_deepsqueeze_topk" "$F" "${M[@]}" "${TK[@]}" --set algorithm.name=deepsqueeze --set algorithm.eta=0.02
    run "${s}_choco_topk" "$F" "${M[@]}" "${TK[@]}" --set algorithm.name=choco --set algorithm.gamma=0.05
    run "${s}_deepsqueeze_q4" "$F" "${M[@]}" "${Q4[@]}" --set algorithm.name=deepsqueeze --set algorithm.eta=0.1
    run "${s}_choco_q4" "$F" "${M[@]}" "${Q4[@]}" --set algorithm.name=choco --set algorithm.gamma=0.2
    $PLOT "$OUT/${s}"_{central,dpsgd,deepsqueeze_topk,choco_topk,deepsqueeze_q4,choco_q4}.json -o "$OUT/${s}.png" \
      --labels "centralized (1 node)" "D-PSGD fp32" "DeepSqueeze top-1%" "CHOCO top-1%" "DeepSqueeze 4-bit" "CHOCO 4-bit" \
      --title "Fashion-MNIST $s, 16-node ring, Dirichlet(0.5)"
    ;;
  scale)
    F=experiments/fmnist_softmax.toml
    SC=(--set cluster.nodes=1024 --set algorithm.rounds=100 --set sim.eval_every=25 --set algorithm.name=deepsqueeze
        --set algorithm.eta=0.02 --set compressor.name=topk --set compressor.ratio=0.01)
    for run in exponential:1 random_regular:1 exponential:2; do
      topo=${run%:*} threads=${run#*:}
      name=scale_$topo
      [ "$threads" != 1 ] && name+=_t$threads
      extra=(--set cluster.topology=$topo --set sim.threads=$threads)
      [ $topo = exponential ] && extra+=(--set cluster.weights=uniform)
      [ $topo = random_regular ] && extra+=(--set cluster.degree=4)
      echo "== $name"
      /usr/bin/time -f "wall %e s, peak RSS %M KiB" "$G" sim --config "$F" "${SC[@]}" "${extra[@]}" \
        --out "$OUT/$name.json" 2>&1 | tail -n 3 | tee "$OUT/$name.time"
    done
    ;;
  nodes)
    # Every node's own model (issue 12): a 12-node 3x4 torus with Dirichlet(0.3) label skew, 4,000 training
    # rounds, then the same runs with 20 and 100 more rounds of final consensus (fp32 averaging, no gradient
    # step).
    F=experiments/fmnist_softmax.toml
    T=(--set cluster.nodes=12 --set cluster.topology=torus --set data.dirichlet_alpha=0.3 --set sim.eval_every=500)
    TK=(--set compressor.name=topk --set compressor.ratio=0.01)
    for m in "dpsgd" "deepsqueeze_topk" "choco_topk"; do
      case $m in
        dpsgd) A=() ;;
        deepsqueeze_topk) A=("${TK[@]}" --set algorithm.name=deepsqueeze --set algorithm.eta=0.02) ;;
        choco_topk) A=("${TK[@]}" --set algorithm.name=choco --set algorithm.gamma=0.02) ;;
      esac
      run "nodes_$m" "$F" "${T[@]}" "${A[@]}" --set algorithm.rounds=4000
      for k in 20 100; do
        run "nodes_${m}_consensus$k" "$F" "${T[@]}" "${A[@]}" --set algorithm.rounds=$((4000 + k)) \
          --set algorithm.final_consensus_rounds=$k
      done
    done
    ;;
  leader)
    # lsgd (Leader SGD on a graph) against D-PSGD on the MLP setup of `mlp` (16-node ring, Dirichlet(0.5),
    # 3,000 rounds): the same runs with a pull toward the local leader of strength lambda (step lr * lambda).
    F=experiments/fmnist_softmax.toml
    M=(--set model.kind=mlp --set 'model.hidden=[128]')
    run leader_dpsgd "$F" "${M[@]}"   # = mlp_dpsgd, with this build's node evaluation (all test images at the end)
    # (lambda = 8, lr * lambda = 0.4 above the ring's self weight 1/3, diverged; it is refused now)
    for l in 0.5 2; do run "leader_lsgd_$l" "$F" "${M[@]}" --set algorithm.name=lsgd --set algorithm.leader_pull=$l; done
    # the global leader (epochs of 100 rounds), alone and with the local pull
    for g in 0.1 0.5; do
      run "leader_lsgd_global_$g" "$F" "${M[@]}" --set algorithm.name=lsgd --set algorithm.leader_pull=0 \
        --set algorithm.leader_global_pull=$g
    done
    run leader_lsgd_2_global_0.5 "$F" "${M[@]}" --set algorithm.name=lsgd --set algorithm.leader_pull=2 \
      --set algorithm.leader_global_pull=0.5
    # codistill (no parameter averaging; a distillation term toward the neighbours' copies, weight alpha):
    # alpha = 0 is every node training alone; copies refreshed every round in fp32, every 10 rounds, and
    # every round as top-1% differences.
    # (alpha = 0 refreshes the unused copies only in round 0: its bytes are those of training alone)
    run leader_codistill_0 "$F" "${M[@]}" --set algorithm.name=codistill --set algorithm.distill_weight=0 --set algorithm.distill_period=1000000
    for a in 1 4; do run "leader_codistill_$a" "$F" "${M[@]}" --set algorithm.name=codistill --set algorithm.distill_weight=$a; done
    run leader_codistill_1_period10 "$F" "${M[@]}" --set algorithm.name=codistill --set algorithm.distill_period=10
    for a in 1 4; do
      run "leader_codistill_${a}_topk" "$F" "${M[@]}" --set algorithm.name=codistill --set algorithm.distill_weight=$a \
        --set compressor.name=topk --set compressor.ratio=0.01
    done
    # the reference variant: fp16 predictions on the first 256 training images (all nodes hold them; labels
    # unused) instead of model copies, every round: 5 KB a message, fewer bytes than top-1% copies
    run leader_codistill_4_reference "$F" "${M[@]}" --set algorithm.name=codistill --set algorithm.distill_weight=4 \
      --set compressor.name=fp16 --set algorithm.distill_reference=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    # the compressed methods at codistill's top-1% bytes, with this build's node evaluation
    TK=(--set compressor.name=topk --set compressor.ratio=0.01)
    run leader_deepsqueeze_topk "$F" "${M[@]}" "${TK[@]}" --set algorithm.name=deepsqueeze --set algorithm.eta=0.02
    run leader_choco_topk "$F" "${M[@]}" "${TK[@]}" --set algorithm.name=choco
    for l in 0.1 2; do
      run "leader_lsgd_deepsqueeze_topk_$l" "$F" "${M[@]}" "${TK[@]}" --set algorithm.name=lsgd \
        --set algorithm.leader_base=deepsqueeze --set algorithm.eta=0.02 --set algorithm.leader_pull=$l
    done
    $PLOT "$OUT"/leader_{dpsgd,lsgd_2,codistill_0,codistill_4,codistill_4_topk,codistill_4_reference,deepsqueeze_topk}.json \
      -o "$OUT/leader.png" --node-accuracy --title "Fashion-MNIST MLP, 16-node ring, Dirichlet(0.5)" \
      --labels "D-PSGD fp32" "lsgd λ = 2" "alone (codistill α = 0)" "codistill α = 4" "codistill α = 4, top-1% copies" \
               "codistill α = 4, reference predictions" "DeepSqueeze top-1%"
    ;;
  gamma)
    # CHOCO top-1% over 10,000 rounds on the torus of `nodes` and on the ring of section 3: gamma 0.05 (the
    # value of the ring rows of section 3) and 0.02 held fixed; 0.05 with the adaptation (algorithm.gamma_adapt);
    # and the defaults (gamma = 2 delta = 0.02, adapted).
    F=experiments/fmnist_softmax.toml
    T=(--set cluster.nodes=12 --set cluster.topology=torus --set data.dirichlet_alpha=0.3)
    C=(--set compressor.name=topk --set compressor.ratio=0.01 --set algorithm.name=choco --set algorithm.rounds=10000
       --set sim.eval_every=250)
    for g in 0.05 0.02; do
      run "gamma_torus_choco_$g" "$F" "${T[@]}" "${C[@]}" --set algorithm.gamma=$g --set algorithm.gamma_adapt=false
      run "gamma_ring_choco_$g" "$F" "${C[@]}" --set algorithm.gamma=$g --set algorithm.gamma_adapt=false
    done
    run gamma_torus_choco_0.05_adapt "$F" "${T[@]}" "${C[@]}" --set algorithm.gamma=0.05
    run gamma_ring_choco_0.05_adapt "$F" "${C[@]}" --set algorithm.gamma=0.05
    run gamma_torus_choco_default "$F" "${T[@]}" "${C[@]}"
    run gamma_ring_choco_default "$F" "${C[@]}"
    ;;
  cltk)
    # CLT-k (docs/cltk.md) against top-k at the same k = 1% on the softmax setup of `fmnist` (16-node ring,
    # diameter 8: round t uses the set the leader of round t - 8 chose), 3,000 rounds. DeepSqueeze at
    # fmnist's eta = 0.02 and at 0.005; CHOCO at the defaults (2 delta = 0.0201 for top-k, delta = 0.01 for
    # cltk), cltk at 2 delta too, and top-k at delta; rand-k (another support chosen without looking at x)
    # at 2 delta and at its default delta; and cltk with each set used for 8 rounds.
    F=experiments/fmnist_softmax.toml
    # cltk8: each set used for 8 rounds (compressor.cltk_period = 8), 1/8 of the announcements.
    P8=(--set compressor.cltk_period=8)
    for e in 0.02 0.005; do
      for c in topk cltk; do
        run "cltk_deepsqueeze_${c}_$e" "$F" --set algorithm.name=deepsqueeze --set algorithm.eta=$e \
          --set compressor.name=$c --set compressor.ratio=0.01
      done
    done
    run cltk_deepsqueeze_cltk8_0.005 "$F" --set algorithm.name=deepsqueeze --set algorithm.eta=0.005 \
      --set compressor.name=cltk --set compressor.ratio=0.01 "${P8[@]}"
    for run in topk: cltk:0.0201 cltk: topk:0.01 randk:0.0201 randk: cltk8:; do
      c=${run%:*} g=${run#*:}
      period=()
      [ $c = cltk8 ] && period=("${P8[@]}")
      run "cltk_choco_${c}_${g:-default}" "$F" --set algorithm.name=choco --set compressor.name=${c%8} \
        --set compressor.ratio=0.01 ${g:+--set algorithm.gamma=$g} "${period[@]}"
    done
    $PLOT "$OUT"/cltk_deepsqueeze_{topk,cltk}_0.005.json "$OUT"/cltk_choco_{topk,cltk,randk}_default.json \
      -o "$OUT/cltk.png" --labels "DeepSqueeze top-1%, η 0.005" "DeepSqueeze CLT-k 1%, η 0.005" "CHOCO top-1%, γ 0.02" \
      "CHOCO CLT-k 1%, γ 0.01" "CHOCO rand-k 1%, γ 0.01" \
      --title "Fashion-MNIST softmax, 16-node ring, Dirichlet(0.5)"
    ;;
  lgc)
    # LGC (docs/lgc.md) against top-k at the same bytes per message, on the MLP setup of `leader` (16-node
    # ring, Dirichlet(0.5), 3,000 rounds). top-1% is 6.3 KB a message. lgc with m = 8 codes per 784-entry
    # block (4.1 KB) and the residual's top-0.34% (2.1 KB), or m = 4 (2.1 KB) and top-0.67% (4.2 KB): 6.3 KB
    # too. Warm-up: 200 rounds of top-k at the residual's ratio (fewer bytes). Also top-0.34% alone (lgc's
    # residual without the codes) and CHOCO at top-1%'s gamma (its default follows the residual's delta), with lgc
    # and with top-0.34% alone.
    F=experiments/fmnist_softmax.toml
    M=(--set model.kind=mlp --set 'model.hidden=[128]')
    L=(--set compressor.name=lgc --set compressor.block=784)
    DS=(--set algorithm.name=deepsqueeze --set algorithm.eta=0.02)
    CH=(--set algorithm.name=choco)
    for a in deepsqueeze choco; do
      [ $a = deepsqueeze ] && A=("${DS[@]}") || A=("${CH[@]}")
      run "lgc_${a}_topk" "$F" "${M[@]}" "${A[@]}" --set compressor.name=topk --set compressor.ratio=0.01
      run "lgc_${a}_m8" "$F" "${M[@]}" "${A[@]}" "${L[@]}" --set compressor.codes=8 --set compressor.ratio=0.0034
      run "lgc_${a}_m4" "$F" "${M[@]}" "${A[@]}" "${L[@]}" --set compressor.codes=4 --set compressor.ratio=0.0067
      run "lgc_${a}_topk_0.0034" "$F" "${M[@]}" "${A[@]}" --set compressor.name=topk --set compressor.ratio=0.0034
    done
    run lgc_choco_m8_gamma_0.02 "$F" "${M[@]}" "${CH[@]}" "${L[@]}" --set compressor.codes=8 --set compressor.ratio=0.0034 \
      --set algorithm.gamma=0.02
    run lgc_choco_topk_0.0034_gamma_0.02 "$F" "${M[@]}" "${CH[@]}" --set compressor.name=topk --set compressor.ratio=0.0034 \
      --set algorithm.gamma=0.02
    $PLOT "$OUT"/lgc_deepsqueeze_{topk,m8,m4,topk_0.0034}.json "$OUT"/lgc_choco_{topk,m8}.json \
      -o "$OUT/lgc.png" --node-accuracy --title "Fashion-MNIST MLP, 16-node ring, Dirichlet(0.5)" \
      --labels "DeepSqueeze top-1%" "DeepSqueeze lgc m 8 + top-0.34%" "DeepSqueeze lgc m 4 + top-0.67%" \
               "DeepSqueeze top-0.34%" "CHOCO top-1%" "CHOCO lgc m 8 + top-0.34%"
    ;;
  *) echo "unknown section $s" >&2; exit 2 ;;
  esac
done
