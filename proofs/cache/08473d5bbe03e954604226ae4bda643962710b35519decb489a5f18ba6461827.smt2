(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 57))
(declare-fun Ta_ () (_ BitVec 57))
(declare-fun Tb_ () (_ BitVec 57))
(declare-fun x0 () (_ BitVec 32))
(assert
 (bvsle (_ bv144115188075823232 57) Ta_))
(assert
 (bvsge (_ bv32385 57) Ta_))
(assert
 (bvsle (_ bv144115188075823232 57) Tb_))
(assert
 (bvsge (_ bv32385 57) Tb_))
(assert
 (bvsle (_ bv144115188075366272 57) Ra_))
(assert
 (bvsge (_ bv485775 57) Ra_))
(assert
 (bvslt Ta_ Tb_))
(assert
 (let ((?x55 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x55) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x55) (_ bv2147483647 57) ?x55)))))
(let ((?x47 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x0))) Tb_) Ra_)))
(let ((?x53 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x47) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x47) (_ bv2147483647 57) ?x47)))))
(bvslt ?x53 ?x60))))))
(check-sat)
