(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 57))
(declare-fun Ta_ () (_ BitVec 57))
(declare-fun Tb_ () (_ BitVec 57))
(declare-fun x0 () (_ BitVec 32))
(assert
 (bvsle (_ bv0 57) Ta_))
(assert
 (bvsge (_ bv65025 57) Ta_))
(assert
 (bvsle (_ bv0 57) Tb_))
(assert
 (bvsge (_ bv65025 57) Tb_))
(assert
 (bvsle (_ bv0 57) Ra_))
(assert
 (bvsge (_ bv975375 57) Ra_))
(assert
 (bvslt Ta_ Tb_))
(assert
 (let ((?x54 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x59 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x54) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x54) (_ bv2147483647 57) ?x54)))))
(let ((?x46 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x0))) Tb_) Ra_)))
(let ((?x52 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x46) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x46) (_ bv2147483647 57) ?x46)))))
(bvslt ?x52 ?x59))))))
(check-sat)
