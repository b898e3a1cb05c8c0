(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun T0_ () (_ BitVec 55))
(declare-fun T1_ () (_ BitVec 55))
(declare-fun T2_ () (_ BitVec 55))
(declare-fun T3_ () (_ BitVec 55))
(declare-fun x0 () (_ BitVec 32))
(assert
 (let ((?x13 (bvadd (bvadd T0_ T1_) T2_)))
(let ((?x20 ((_ extract 31 0) (bvadd (bvadd ((_ sign_extend 22) ((_ sign_extend 1) ((_ extract 31 0) x0))) T3_) ?x13))))
(let ((?x17 ((_ extract 31 0) (bvadd ((_ sign_extend 22) ((_ sign_extend 1) ((_ extract 31 0) x0))) (bvadd ?x13 T3_)))))
(not (= ?x17 ?x20))))))
(check-sat)
