(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 50))
(declare-fun Ta_ () (_ BitVec 50))
(declare-fun Tb_ () (_ BitVec 50))
(declare-fun x0 () (_ BitVec 32))
(assert
 (bvsle (_ bv1125899906842504 50) Ta_))
(assert
 (bvsge (_ bv105 50) Ta_))
(assert
 (bvsle (_ bv1125899906842504 50) Tb_))
(assert
 (bvsge (_ bv105 50) Tb_))
(assert
 (bvsle (_ bv1125899906838904 50) Ra_))
(assert
 (bvsge (_ bv3255 50) Ra_))
(assert
 (bvslt Ta_ Tb_))
(assert
 (let ((?x55 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x55) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x55) (_ bv2147483647 50) ?x55)))))
(let ((?x47 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Tb_) Ra_)))
(let ((?x53 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x47) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x47) (_ bv2147483647 50) ?x47)))))
(bvslt ?x53 ?x60))))))
(check-sat)
