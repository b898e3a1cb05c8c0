(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(declare-fun x2 () (_ BitVec 8))
(declare-fun x3 () (_ BitVec 8))
(assert
 (let ((?x7 ((_ extract 7 1) x0)))
 (= (_ bv0 7) ?x7)))
(assert
 (let ((?x28 ((_ extract 7 1) x1)))
 (= (_ bv0 7) ?x28)))
(assert
 (let ((?x32 ((_ extract 7 1) x2)))
 (= (_ bv0 7) ?x32)))
(assert
 (let ((?x36 ((_ extract 7 1) x3)))
 (= (_ bv0 7) ?x36)))
(assert
 (let (($x47 (and (bvsle (_ bv0 47) ((_ zero_extend 46) (bvxor ((_ extract 0 0) x0) ((_ extract 0 0) x1)))) (bvsge (_ bv1 47) ((_ zero_extend 46) (bvxor ((_ extract 0 0) x0) ((_ extract 0 0) x1)))))))
(not $x47)))
(check-sat)
