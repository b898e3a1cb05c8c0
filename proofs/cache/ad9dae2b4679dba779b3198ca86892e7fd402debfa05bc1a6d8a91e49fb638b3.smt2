(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun em_ () (_ BitVec 12))
(declare-fun x0 () (_ BitVec 32))
(assert
 (let ((?x7 ((_ extract 31 0) x0)))
 (let ((?x11 ((_ extract 22 0) ?x7)))
 (let (($x14 (= (_ bv0 23) ?x11)))
 (let ((?x8 ((_ extract 30 23) ?x7)))
 (let (($x9 (= (_ bv255 8) ?x8)))
 (not (or (and $x9 (and (distinct (_ bv0 23) ?x11) true)) (and $x9 $x14)))))))))
(assert
 (bvsge em_ (_ bv3584 12)))
(assert
 (bvsle em_ (_ bv129 12)))
(assert
 (let ((?x62 (ite (and (distinct (_ bv0 8) ((_ extract 30 23) ((_ extract 31 0) x0))) true) (bvsub ((_ zero_extend 3) ((_ extract 30 23) ((_ extract 31 0) x0))) (_ bv127 11)) (_ bv1922 11))))
(let ((?x63 ((_ sign_extend 4) ?x62)))
(let ((?x7 ((_ extract 31 0) x0)))
(let ((?x11 ((_ extract 22 0) ?x7)))
(let (($x14 (= (_ bv0 23) ?x11)))
(let (($x55 (and (= (_ bv0 8) ((_ extract 30 23) ?x7)) $x14)))
(let ((?x52 ((_ sign_extend 3) em_)))
(let (($x70 (= (ite (bvslt ?x52 (ite $x55 (_ bv28672 15) ?x63)) (ite $x55 (_ bv28672 15) ?x63) ?x52) (ite (or $x55 (bvsge ?x52 ?x63)) ?x52 ?x63))))
(not (and $x70 (=> (not $x55) (and (bvsge ?x63 (_ bv32642 15)) (bvsle ?x63 (_ bv127 15)))))))))))))))
(check-sat)
