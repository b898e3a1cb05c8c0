(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun T0_ () (_ BitVec 55))
(declare-fun T1_ () (_ BitVec 55))
(declare-fun T2_ () (_ BitVec 55))
(declare-fun T3_ () (_ BitVec 55))
(declare-fun x0 () (_ BitVec 32))
(assert
 (let ((?x20 (bvadd (bvadd ((_ sign_extend 22) ((_ sign_extend 1) ((_ extract 31 0) x0))) T2_) (bvadd (bvadd T0_ T1_) T3_))))
(let ((?x8 ((_ sign_extend 22) ((_ sign_extend 1) ((_ extract 31 0) x0)))))
(let (($x22 (= ((_ extract 31 0) (bvadd ?x8 (bvadd (bvadd (bvadd T0_ T1_) T2_) T3_))) ((_ extract 31 0) ?x20))))
(not $x22)))))
(check-sat)
